import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cooperatorFor, syncCooperation, type LifecycleClientDeps } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { readPod } from '../../functions/ops-lifecycle/pod-access/pod-api.js';
import { cleanupWithoutFinalizers, createControlledPod, mustReadPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// Scenario 4 of issue 15: a cooperator that registers a Pod in its load balancer before its protection
// finalizer is on the Pod leaves a window in which a lifecycle can start and be granted operate while the
// load balancer still routes to it. The finalizer must be on the API server before the Pod is served.
describe('ops-lifecycle: cooperation is finalizer first', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  let deps: LifecycleClientDeps;

  beforeAll(async () => {
    sb = await openSandbox('opslc-coop-order');
    ripple = await startRipple(sb, [definition({})]);
    deps = { kc: sb.kc };
  });
  afterAll(async () => {
    await ripple?.stop();
    await cleanupWithoutFinalizers(sb);
  });

  it('the protection finalizer is on the Pod before the cooperator is told to serve it (scenario 4)', async () => {
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name: 'lb' }, spec: { selector: { app: 'first' }, ports: [{ port: 80 }] } },
    });
    const cooperator = cooperatorFor({ kind: 'Service', namespace: sb.namespace, name: 'lb' });
    const ref = await createControlledPod(sb, 'first');
    await waitServing(sb, ref);

    // What the API server held each time the cooperator was asked to serve the Pod.
    const seenWhenServing: Array<string[] | undefined> = [];
    const outcome = await syncCooperation(deps, ref, cooperator, {
      onLifecycleReady: async () => {
        seenWhenServing.push((await readPod(sb.kc, ref))?.metadata.finalizers ?? []);
      },
    });
    expect(outcome).toMatchObject({ gone: false, lifecycleReady: true, updated: true });
    expect(seenWhenServing.length).toBeGreaterThan(0);
    for (const finalizers of seenWhenServing) expect(finalizers).toContain(cooperator.finalizer);
    expect((await mustReadPod(sb, ref)).metadata.finalizers).toContain(cooperator.finalizer);
  });
});
