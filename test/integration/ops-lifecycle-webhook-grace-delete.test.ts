import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletionAdapter, operationClient } from '../../functions/ops-lifecycle/client/index.js';
import { GRACE_DELETE_ADAPTER, GRACE_DELETE_ANNOTATION } from '../../functions/ops-lifecycle/admission/grace-delete.js';
import { finishGraceDelete } from '../../functions/ops-lifecycle/admission/grace-delete-finish.js';
import { lifecyclePodSchema } from '../../functions/ops-lifecycle/pod-access/pod.js';
import { eventSinkOf } from '../../runtime/events.js';
import { createLogger } from '../../base/log.js';
import { definition as emitEvents } from '../../functions/emit-events/definition.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { CONTROL_LABEL, Label, perIdKey, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { createControlledPod, labelsOfId, mustReadPod, recordPod, sleep, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startTestWebhook, type TestWebhook } from '../fixtures/ops-lifecycle-webhook.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

/** The registration reaches the API server's webhook informer asynchronously: wait until a probe Pod is gated. */
async function webhookActive(sb: TestSandbox): Promise<void> {
  await waitFor('the webhook to be active', 30_000, async () => {
    const name = `probe-${Date.now()}`;
    const created = await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: { metadata: { name, labels: { [CONTROL_LABEL]: 'true' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } },
    });
    // A probe is not in service yet, so the grace-delete webhook (when on) lets it go at once: nothing to drain.
    await sb.core.deleteNamespacedPod({ name, namespace: sb.namespace, gracePeriodSeconds: 0 });
    return (created.spec?.readinessGates ?? []).some((g) => g.conditionType === SERVICE_READY_CONDITION);
  }, 500);
}

async function deleteError(sb: TestSandbox, name: string): Promise<{ code?: number; message: string } | undefined> {
  try {
    await sb.core.deleteNamespacedPod({ name, namespace: sb.namespace });
    return undefined;
  } catch (err) {
    const e = err as { code?: number; body?: unknown };
    return { ...(e.code !== undefined ? { code: e.code } : {}), message: typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? String(err)) };
  }
}

// kuperator's GraceDelete: a DELETE of an opted-in Pod that is in service is refused and turned into a delete
// operation through the lifecycle; the delete goes through once the lifecycle granted it. Off by default.
describe('ops-lifecycle webhook: delete through the lifecycle (GraceDelete) on', () => {
  let sb: TestSandbox;
  let hook: TestWebhook;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-gracedel');
    hook = await startTestWebhook(sb, { graceDelete: { kc: sb.kc } });
    ripple = await startRipple(sb, [definition({}), emitEvents()]);
    await webhookActive(sb);
  });
  afterAll(async () => {
    await ripple?.stop();
    await hook?.stop();
    await sb?.cleanup();
  });

  it('a delete of a serving Pod is refused with a clear message and begins a delete operation marked as GraceDelete\'s; a retry begins nothing new', async () => {
    const ref = await createControlledPod(sb, 'serving');
    await waitServing(sb, ref);

    const refused = await deleteError(sb, 'serving');
    expect(refused, 'the first delete is refused').toBeDefined();
    expect(refused?.message).toMatch(/deletion is underway through PodOpsLifecycle/);
    const pod = await sb.core.readNamespacedPod({ name: 'serving', namespace: sb.namespace });
    expect(pod.metadata?.deletionTimestamp, 'not deleted').toBeUndefined();
    const labels = pod.metadata?.labels ?? {};
    expect(labels).toHaveProperty(perIdKey('operating', GRACE_DELETE_ADAPTER.id));
    expect(labels[perIdKey('operationType', GRACE_DELETE_ADAPTER.id)]).toBe('delete');
    expect(labels).toHaveProperty(Label.preparingToDelete);
    const begunAt = labels[perIdKey('operating', GRACE_DELETE_ADAPTER.id)];

    // A retry while the Pod drains is refused again, and begins nothing new: the round begun by the first
    // refusal is the one still running (a second begin would restart it with a new timestamp).
    const again = await deleteError(sb, 'serving');
    expect(again?.message).toMatch(/deletion is underway through PodOpsLifecycle/);
    const afterRetry = (await sb.core.readNamespacedPod({ name: 'serving', namespace: sb.namespace })).metadata?.labels ?? {};
    expect(afterRetry[perIdKey('operating', GRACE_DELETE_ADAPTER.id)], 'the same delete round').toBe(begunAt);
    expect(pod.metadata?.annotations?.[GRACE_DELETE_ANNOTATION], 'the round is marked as GraceDelete\'s').toBe(begunAt);
  });

  it('one DELETE by the user: once the lifecycle grants operate to the round GraceDelete began, the lifecycle deletes the Pod (no second DELETE)', async () => {
    const ref = await createControlledPod(sb, 'once');
    await waitServing(sb, ref);
    const rec = await recordPod(sb, 'once');
    try {
      const refused = await deleteError(sb, 'once');
      expect(refused?.message, 'the one DELETE is refused').toMatch(/deletion is underway through PodOpsLifecycle/);
      // No further DELETE from the test: the lifecycle drains the Pod, grants operate, and deletes it itself.
      await waitFor('the lifecycle to delete the Pod', 90_000, async () => {
        const found = await sb.core.readNamespacedPod({ name: 'once', namespace: sb.namespace }).catch(() => undefined);
        return found === undefined || found.metadata?.deletionTimestamp !== undefined;
      }).catch(async (err: unknown) => {
        const last = rec.snapshots.at(-1);
        throw new Error(`${String(err)} (last seen: rv ${last?.resourceVersion}, deleting ${String(last?.deleting)}, labels ${JSON.stringify(labelsOfId(last?.labels ?? {}, GRACE_DELETE_ADAPTER.id))}, ready ${String(last?.ready)})`);
      });
      // Deleted only after operate: every version before the first deleting one is in service or draining, never deleted early.
      const firstDeleting = rec.snapshots.findIndex((s) => s.deleting);
      const before = firstDeleting === -1 ? rec.snapshots : rec.snapshots.slice(0, firstDeleting);
      expect(before.some((s) => perIdKey('operate', GRACE_DELETE_ADAPTER.id) in s.labels), 'operate was granted before the delete').toBe(true);
      let reasons: string[] = [];
      await waitFor('an Event saying why the lifecycle deleted the Pod', 30_000, async () => {
        const events = await sb.core.listNamespacedEvent({ namespace: sb.namespace, fieldSelector: 'involvedObject.name=once' });
        reasons = events.items.map((e) => e.reason ?? '');
        return reasons.includes('GraceDeleted');
      }).catch((err: unknown) => {
        throw new Error(`${String(err)} (event reasons seen: ${JSON.stringify(reasons)})`);
      });
    } finally {
      rec.stop();
    }
  });

  it('a Pod someone else deleted before the lifecycle could: the grace delete counts as done and sends no GraceDeleted Event', async () => {
    // The Pod as the lifecycle last planned from it (its GraceDelete round holds operate), gone from the API server since.
    const TS = '1799999999000000000';
    const id = GRACE_DELETE_ADAPTER.id;
    const gone = lifecyclePodSchema.parse({
      metadata: {
        name: 'deleted-meanwhile',
        namespace: sb.namespace,
        uid: '00000000-0000-0000-0000-000000000001',
        resourceVersion: '1',
        labels: { [CONTROL_LABEL]: 'true', [perIdKey('operating', id)]: TS, [perIdKey('operationType', id)]: 'delete', [perIdKey('operate', id)]: TS },
        annotations: { [GRACE_DELETE_ANNOTATION]: TS },
      },
    });
    const emitted: string[] = [];
    const done = await finishGraceDelete({ kc: sb.kc, now: () => new Date(), log: createLogger('test', 'silent'), events: eventSinkOf(async (e) => void emitted.push(e.reason)) }, gone);
    expect(done).toBe(true);
    expect(emitted).toEqual([]);
  });

  it('a pod-delete round the user began (not GraceDelete) is never deleted by the lifecycle; the user\'s DELETE goes through once operate is granted', async () => {
    const ref = await createControlledPod(sb, 'users-own');
    await waitServing(sb, ref);
    const rec = await recordPod(sb, 'users-own');
    try {
      const ops = operationClient({ kc: sb.kc });
      // The same ID and type as GraceDelete's, begun by the user's own controller: no GraceDelete mark.
      await ops.begin(ref, deletionAdapter(GRACE_DELETE_ADAPTER.id, 'delete'));
      await waitFor('the delete operation to be granted operate', 60_000, async () => (await ops.allowOps(ref, GRACE_DELETE_ADAPTER)).allowed);
      // Wait until the lifecycle has nothing left to write; had it meant to delete, it would have by then.
      await waitFor('the lifecycle to have nothing left to write', 60_000, async () => {
        const v = (await mustReadPod(sb, ref)).metadata.resourceVersion;
        await sleep(3_000);
        return (await mustReadPod(sb, ref)).metadata.resourceVersion === v;
      });
      for (const s of rec.snapshots) expect(s.deleting, `rv ${s.resourceVersion} deleting`).toBe(false);
      expect((await mustReadPod(sb, ref)).metadata.annotations?.[GRACE_DELETE_ANNOTATION]).toBeUndefined();

      expect(await deleteError(sb, 'users-own'), 'the delete once granted').toBeUndefined();
      await waitFor('the Pod to be gone', 60_000, async () => {
        const found = await sb.core.readNamespacedPod({ name: 'users-own', namespace: sb.namespace }).catch(() => undefined);
        return found === undefined || found.metadata?.deletionTimestamp !== undefined;
      });
    } finally {
      rec.stop();
    }
  });
});

describe('ops-lifecycle webhook: GraceDelete off (the default)', () => {
  let sb: TestSandbox;
  let hook: TestWebhook;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-gracedel-off');
    hook = await startTestWebhook(sb);
    ripple = await startRipple(sb, [definition({})]);
    await webhookActive(sb);
  });
  afterAll(async () => {
    await ripple?.stop();
    await hook?.stop();
    await sb?.cleanup();
  });

  it('a delete of a serving Pod passes through at once; no version of the Pod carries a delete operation', async () => {
    const ref = await createControlledPod(sb, 'serving');
    await waitServing(sb, ref);
    const rec = await recordPod(sb, 'serving');
    try {
      expect(await deleteError(sb, 'serving')).toBeUndefined();
      await waitFor('the Pod to be gone', 60_000, async () => {
        const found = await sb.core.readNamespacedPod({ name: 'serving', namespace: sb.namespace }).catch(() => undefined);
        return found === undefined;
      });
      await waitFor('the watch to report the delete', 10_000, async () => rec.snapshots.some((s) => s.deleting) || undefined, 50);
      for (const s of rec.snapshots) expect(labelsOfId(s.labels, GRACE_DELETE_ADAPTER.id), `rv ${s.resourceVersion}`).toEqual([]);
    } finally {
      rec.stop();
    }
  });
});
