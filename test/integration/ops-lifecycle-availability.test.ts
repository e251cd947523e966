import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient, withLifecycle, type OperationAdapter } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { MAX_UNAVAILABLE_ANNOTATION, perIdKey, requiresOffline, liveLifecycles, parseLifecycleView } from '../../functions/ops-lifecycle/protocol/index.js';
import { recordPod, waitServing, type PodSnapshot } from '../fixtures/ops-lifecycle-pods.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const offline = (s: PodSnapshot) => s.ready !== 'True' || liveLifecycles(parseLifecycleView(s.labels)).some((e) => requiresOffline(e.stage));

// Scenario 8 of issue 15: pre-check is a real check, an availability budget per owner. Three Pods of one owner
// allow one out of service at a time; a second operation waits in pre-check, still serving, until the first
// Pod is back.
describe('ops-lifecycle: availability budget per owner (pre-check)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-budget');
    ripple = await startRipple(sb, [definition({})]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('max-unavailable=1: the second Pod stays in pre-check until the first is back in service (scenario 8)', async () => {
    const owner = await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'owner' } } });
    const ownerRef = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '', controller: true };
    for (const name of ['a', 'b', 'c']) {
      await sb.core.createNamespacedPod({
        namespace: sb.namespace,
        body: withLifecycle<V1Pod>({
          metadata: { name, labels: { app: 'budget' }, annotations: { [MAX_UNAVAILABLE_ANNOTATION]: '1' }, ownerReferences: [ownerRef] },
          spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
        }),
      });
    }
    for (const name of ['a', 'b', 'c']) await waitServing(sb, { namespace: sb.namespace, name });
    const recA = await recordPod(sb, 'a');
    const recB = await recordPod(sb, 'b');

    const ops = operationClient({ kc: sb.kc });
    const adapter: OperationAdapter = { id: 'roll', type: 'update', allowMultiType: true };
    const a = { namespace: sb.namespace, name: 'a' };
    const b = { namespace: sb.namespace, name: 'b' };
    await ops.begin(a, adapter);
    await waitFor('a to be granted operate', 30_000, async () => (await ops.allowOps(a, adapter)).allowed);
    await ops.begin(b, adapter);
    await waitFor('b to reach pre-check', 30_000, async () => perIdKey('preCheck', 'roll') in ((await ops.allowOps(b, adapter)).pod.metadata.labels ?? {}));

    await ops.finish(a, adapter);
    await waitServing(sb, a);
    await waitFor('b to be granted operate once a is back', 30_000, async () => (await ops.allowOps(b, adapter)).allowed);
    await ops.finish(b, adapter);
    await waitServing(sb, b);
    recA.stop();
    recB.stop();

    // In etcd order: b was pre-checked (taken out of service) only after a's last offline version.
    const rv = (s: PodSnapshot) => BigInt(s.resourceVersion);
    const aOffline = recA.snapshots.filter(offline);
    const aBack = rv(aOffline[aOffline.length - 1] ?? recA.snapshots[0]!);
    const bPreChecked = recB.snapshots.filter((s) => perIdKey('preChecked', 'roll') in s.labels || perIdKey('operate', 'roll') in s.labels);
    expect(aOffline.length).toBeGreaterThan(0);
    expect(bPreChecked.length).toBeGreaterThan(0);
    expect(rv(bPreChecked[0]!) > aBack, `b pre-checked at ${bPreChecked[0]?.resourceVersion}, a last offline at ${aBack}`).toBe(true);
    // And b kept serving while it waited: every version of b before that was Ready.
    expect(recB.snapshots.filter((s) => rv(s) < rv(bPreChecked[0]!)).every((s) => s.ready === 'True')).toBe(true);
  });
});
