import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definition as emitEvents } from '../../functions/emit-events/definition.js';
import { operationClient, type OperationAdapter } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { CONTROL_LABEL, perIdKey, PROTECTION_FINALIZER_PREFIX, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { kubeRequest } from '../../kube/raw.js';
import { cleanupWithoutFinalizers, conditionOf, createControlledPod, waitPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Scenario 6 of issue 15: stuck states must not be silent, and leaving the lifecycle must not leave the Pod out
// of service.
describe('ops-lifecycle: stuck states and leaving the lifecycle', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  const HOLD = `${PROTECTION_FINALIZER_PREFIX}/test-hold`;

  beforeAll(async () => {
    sb = await openSandbox('opslc-stuck');
    ripple = await startRipple(sb, [definition({}), emitEvents()]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await cleanupWithoutFinalizers(sb);
  });

  const mergePatch = (name: string, body: unknown) =>
    kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/pods/${name}`, { method: 'PATCH', body, contentType: 'application/merge-patch+json' });

  it('operating without operation-type, which holds every other ID, is reported as a Warning Event on the Pod', async () => {
    const ref = await createControlledPod(sb, 'typeless');
    await waitServing(sb, ref);
    const ops = operationClient({ kc: sb.kc });
    await ops.begin(ref, { id: 'good', type: 'update', allowMultiType: true });
    // A broken client: operating alone, no type.
    await mergePatch('typeless', { metadata: { labels: { [perIdKey('operating', 'broken')]: `${Date.now()}000000` } } });
    const warning = await waitFor('a Warning Event about the typeless ID', 30_000, async () => {
      const events = await sb.core.listNamespacedEvent({ namespace: sb.namespace, fieldSelector: `involvedObject.name=typeless,type=Warning` });
      return events.items.find((e) => (e.message ?? '').includes('operating without operation-type'));
    }, 250);
    expect(warning.reason).toBe('LifecycleStuck');
    expect(warning.message).toContain('broken');
  });

  it('removing the control label mid-lifecycle gives the gate back, so the Pod is Ready again', async () => {
    const ref = await createControlledPod(sb, 'leaver');
    await waitServing(sb, ref);
    await mergePatch('leaver', { metadata: { finalizers: [HOLD] } });
    const ops = operationClient({ kc: sb.kc });
    const adapter: OperationAdapter = { id: 'roll', type: 'update', allowMultiType: true };
    await ops.begin(ref, adapter);
    // Held in preparing by the finalizer: out of service.
    await waitPod(sb, ref, 'preparing, gate False, not Ready', (p) =>
      perIdKey('preparing', 'roll') in (p.metadata.labels ?? {}) && conditionOf(p, SERVICE_READY_CONDITION) === 'False' && conditionOf(p, 'Ready') === 'False',
    );
    // The owner takes the Pod out of the lifecycle.
    await mergePatch('leaver', { metadata: { labels: { [CONTROL_LABEL]: null } } });
    const back = await waitPod(sb, ref, 'the gate True and Ready again', (p) => conditionOf(p, SERVICE_READY_CONDITION) === 'True' && conditionOf(p, 'Ready') === 'True', 30_000);
    expect(back.metadata.labels).not.toHaveProperty(CONTROL_LABEL);
  });
});
