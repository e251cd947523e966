import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient, withLifecycle, type OperationAdapter } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { Label, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { kubeRequest } from '../../kube/raw.js';
import { conditionOf, sleep, waitPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { recordTraffic, waitRouted } from '../fixtures/ops-lifecycle-traffic.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Scenario 6 of issue 15, last part: stay-offline means "do not bring the Pod back after its next lifecycle"
// (kuperator #246), not "take it out now": labelling a serving Pod must not drop it from its Service at once.
describe('ops-lifecycle: stay-offline', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-offline');
    ripple = await startRipple(sb, [definition({})]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('a serving Pod labelled stay-offline keeps serving until its next lifecycle, and stays out after it', async () => {
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
    });
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: withLifecycle<V1Pod>({ metadata: { name: 'web-0', labels: { app: 'web' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } }),
    });
    const ref = { namespace: sb.namespace, name: 'web-0' };
    await waitServing(sb, ref);
    await waitRouted(sb, 'web', ['web-0']);

    const rec = await recordTraffic(sb);
    await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/pods/web-0`, {
      method: 'PATCH',
      body: { metadata: { labels: { [Label.stayOffline]: 'true' } } },
      contentType: 'application/merge-patch+json',
    });
    await waitPod(sb, ref, 'the stay-offline label', (p) => Label.stayOffline in (p.metadata.labels ?? {}));
    // Long enough for the reconciler, KWOK and the EndpointSlice controller to have reacted, were they to.
    await sleep(3_000);
    const labelled = rec.ordered();
    expect(labelled.filter((e) => e.kind === 'Pod').every((e) => e.kind === 'Pod' && e.ready === 'True')).toBe(true);
    expect(labelled.filter((e) => e.kind === 'EndpointSlice').every((e) => e.kind === 'EndpointSlice' && e.routed.includes('web-0'))).toBe(true);
    rec.stop();

    // Its next lifecycle takes it out, and it does not come back.
    const ops = operationClient({ kc: sb.kc });
    const adapter: OperationAdapter = { id: 'drain', type: 'delete', allowMultiType: true };
    await ops.begin(ref, adapter);
    await waitFor('operate', 30_000, async () => (await ops.allowOps(ref, adapter)).allowed);
    await ops.finish(ref, adapter);
    const done = await waitPod(sb, ref, 'the lifecycle done, the Pod out of service', (p) =>
      !Object.keys(p.metadata.labels ?? {}).some((k) => k.endsWith('/drain')) && conditionOf(p, 'Ready') === 'False',
    );
    expect(conditionOf(done, SERVICE_READY_CONDITION)).toBe('False');
    expect(done.metadata.labels).not.toHaveProperty(Label.serviceAvailable);
    await waitRouted(sb, 'web', []);
  });
});
