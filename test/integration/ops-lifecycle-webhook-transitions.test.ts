import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withLifecycle } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, perIdKey, permissionKey } from '../../functions/ops-lifecycle/protocol/index.js';
import { goClient, type GoAdapter } from '../fixtures/ops-lifecycle-go-client.js';
import { createControlledPod, labelsOfId, recordPod, waitPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startTestWebhook, type TestWebhook } from '../fixtures/ops-lifecycle-webhook.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

const UPDATE: GoAdapter = { id: 'collaset', type: 'update' };
const RESTART: GoAdapter = { id: 'opsjob', type: 'restart' };
const labelsOf = (pod: V1Pod | undefined) => ({ ...(pod?.metadata?.labels ?? {}) });
const has = (labels: Record<string, string>, key: string) => key in labels;

// kuperator's mutating webhook makes its transitions inside the write of whoever wrote the Pod, so a Go client's
// Update is answered with the Pod as the transition left it. Each case below writes as kuperator's Go client does
// (one whole-object Update) and reads that answer: the Pod as stored by that one write. Without Ripple's
// transitions webhook the answer is the client's own labels, and the reconciler catches up one event later.
describe('ops-lifecycle webhook: kuperator same-write transitions, as a Go client sees them', () => {
  let sb: TestSandbox;
  let hook: TestWebhook;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-trans');
    hook = await startTestWebhook(sb);
    ripple = await startRipple(sb, [definition({})]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await hook?.stop();
    await sb?.cleanup();
  });

  const operateOf = (id: string) => (pod: { metadata: { labels?: Record<string, string> } }) => has(pod.metadata.labels ?? {}, perIdKey('operate', id));

  it('Begin (Pod UPDATE): the write that begins is answered with pre-check stamped', async () => {
    const go = goClient(sb);
    const ref = await createControlledPod(sb, 'begin');
    await waitServing(sb, ref);
    const answer = labelsOf(await go.begin('begin', UPDATE));
    expect(answer[perIdKey('operationType', UPDATE.id)]).toBe(UPDATE.type);
    expect(answer, 'pre-check is stamped in the write that begins').toHaveProperty(perIdKey('preCheck', UPDATE.id));
    expect(answer[perIdKey('preCheck', UPDATE.id)]).toMatch(/^\d{19}$/);
  });

  it('Finish (Pod UPDATE): the write that finishes is answered operated, with done-operation-type and post-check', async () => {
    const go = goClient(sb);
    const ref = await createControlledPod(sb, 'finish');
    await waitServing(sb, ref);
    await go.begin('finish', UPDATE);
    await waitPod(sb, ref, 'operate granted', operateOf(UPDATE.id), 60_000);

    const answer = labelsOf(await go.finish('finish', UPDATE));
    const k = (l: Parameters<typeof perIdKey>[0]) => perIdKey(l, UPDATE.id);
    expect(answer).toHaveProperty(k('operated'));
    expect(answer[k('doneOperationType')]).toBe(UPDATE.type);
    expect(answer).toHaveProperty(k('postCheck'));
    for (const gone of [k('operating'), k('operationType'), k('operate'), k('preChecked'), permissionKey(UPDATE.type)]) expect(answer, gone).not.toHaveProperty(gone);
    await waitServing(sb, ref);
  });

  it('two IDs: the first Finish holds at the operating barrier, the second moves both to operated in its write', async () => {
    const go = goClient(sb);
    const ref = await createControlledPod(sb, 'barrier');
    await waitServing(sb, ref);
    await go.begin('barrier', UPDATE);
    await go.begin('barrier', RESTART);
    await waitPod(sb, ref, 'operate granted to both IDs', (p) => operateOf(UPDATE.id)(p) && operateOf(RESTART.id)(p), 60_000);

    const first = labelsOf(await go.finish('barrier', UPDATE));
    expect(first, 'the other ID still operates: nothing moves past operate').toHaveProperty(perIdKey('operate', UPDATE.id));
    expect(first).not.toHaveProperty(perIdKey('operated', UPDATE.id));

    const second = labelsOf(await go.finish('barrier', RESTART));
    for (const a of [UPDATE, RESTART]) {
      expect(second, a.id).toHaveProperty(perIdKey('operated', a.id));
      expect(second[perIdKey('doneOperationType', a.id)]).toBe(a.type);
      expect(second).toHaveProperty(perIdKey('postCheck', a.id));
      expect(second).not.toHaveProperty(perIdKey('operate', a.id));
      expect(second).not.toHaveProperty(permissionKey(a.type));
    }
    await waitServing(sb, ref);
  });

  it('Undo (Pod UPDATE): the write that undoes is answered without the ID; the permission goes with the last ID of its type', async () => {
    const go = goClient(sb);
    const ref = await createControlledPod(sb, 'undo');
    await waitServing(sb, ref);
    const other: GoAdapter = { id: 'other', type: UPDATE.type };
    await go.begin('undo', UPDATE);
    await go.begin('undo', other);
    await waitPod(sb, ref, 'both IDs pre-checked (permission granted)', (p) => {
      const l = p.metadata.labels ?? {};
      return has(l, permissionKey(UPDATE.type)) && !has(l, perIdKey('preCheck', UPDATE.id)) && !has(l, perIdKey('preCheck', other.id));
    }, 60_000);

    const first = labelsOf(await go.undo('undo', UPDATE));
    expect(labelsOfId(first, UPDATE.id), 'every label of the undone ID, the undo label too').toEqual([]);
    expect(first, 'another ID of the type still needs the permission').toHaveProperty(permissionKey(UPDATE.type));
    const second = labelsOf(await go.undo('undo', other));
    expect(labelsOfId(second, other.id)).toEqual([]);
    expect(second).not.toHaveProperty(permissionKey(UPDATE.type));
    await waitServing(sb, ref);
  });

  it('pods/status: the status write that turns service-ready True back completes the round in that write', async () => {
    const go = goClient(sb);
    const ref = await createControlledPod(sb, 'status');
    await waitServing(sb, ref);
    const rec = await recordPod(sb, 'status');
    try {
      await go.begin('status', UPDATE);
      await waitPod(sb, ref, 'operate granted', operateOf(UPDATE.id), 60_000);
      const finishedAt = Number((await go.finish('status', UPDATE))?.metadata?.resourceVersion);
      await waitServing(sb, ref);
      const after = rec.snapshots.filter((s) => Number(s.resourceVersion) > finishedAt);
      const back = after.find((s) => s.serviceReady === 'True');
      expect(back, 'a version with service-ready True after Finish').toBeDefined();
      // The reconciler writes completing with its labels, then the gate through pods/status: kuperator's webhook
      // cleans the round up inside that status write (the expected finalizers being satisfied).
      expect(labelsOfId(back?.labels ?? {}, UPDATE.id), `labels at rv ${back?.resourceVersion}`).toEqual([]);
      expect(after.some((s) => has(s.labels, perIdKey('completing', UPDATE.id))), 'completing was visible before').toBe(true);
    } finally {
      rec.stop();
    }
  });

  it('a cooperator putting its protection finalizer back (Pod UPDATE) completes the round in that write', async () => {
    const go = goClient(sb);
    const finalizer = 'prot.podopslifecycle.kusionstack.io/test-lb';
    const pod = withLifecycle<V1Pod>({
      metadata: {
        name: 'coop',
        labels: { app: 'coop' },
        annotations: { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { [`LoadBalancer/${sb.namespace}/lb`]: finalizer } }) },
        finalizers: [finalizer],
      },
      spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
    });
    await sb.core.createNamespacedPod({ namespace: sb.namespace, body: pod });
    const ref = { namespace: sb.namespace, name: 'coop' };
    /** The cooperator's write: the whole Pod with its finalizer list edited, as ResourceConsist's Update does. */
    const setFinalizer = async (on: boolean): Promise<V1Pod> => {
      const current = await go.read('coop');
      const rest = (current.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
      return sb.core.replaceNamespacedPod({ name: 'coop', namespace: sb.namespace, body: { ...current, metadata: { ...current.metadata, finalizers: on ? [...rest, finalizer] : rest } } });
    };
    try {
      await waitServing(sb, ref);
      await go.begin('coop', UPDATE);
      await waitPod(sb, ref, 'service-ready False (preparing)', (p) => p.status?.conditions?.some((c) => c.type === 'pod.kusionstack.io/service-ready' && c.status === 'False') ?? false, 60_000);
      await setFinalizer(false);
      await waitPod(sb, ref, 'operate granted', operateOf(UPDATE.id), 60_000);
      await go.finish('coop', UPDATE);
      await waitPod(sb, ref, 'completing, gate True, waiting for the cooperator', (p) =>
        has(p.metadata.labels ?? {}, perIdKey('completing', UPDATE.id)) && (p.status?.conditions?.some((c) => c.type === 'pod.kusionstack.io/service-ready' && c.status === 'True') ?? false), 60_000);

      const answer = labelsOf(await setFinalizer(true));
      expect(labelsOfId(answer, UPDATE.id), 'the round is cleaned up in the write that satisfies the last expected finalizer').toEqual([]);
      await waitServing(sb, ref);
    } finally {
      await setFinalizer(false).catch(() => undefined);
    }
  });
});
