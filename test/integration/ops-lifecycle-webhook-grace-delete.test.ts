import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient } from '../../functions/ops-lifecycle/client/index.js';
import { GRACE_DELETE_ADAPTER } from '../../functions/ops-lifecycle/admission/grace-delete.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { CONTROL_LABEL, Label, perIdKey, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { createControlledPod, labelsOfId, recordPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
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
    ripple = await startRipple(sb, [definition({})]);
    await webhookActive(sb);
  });
  afterAll(async () => {
    await ripple?.stop();
    await hook?.stop();
    await sb?.cleanup();
  });

  it('a delete of a serving Pod is refused with a clear message and begins a delete operation; once operate is granted the delete goes through', async () => {
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
    const ops = operationClient({ kc: sb.kc });
    await waitFor('the delete operation to be granted operate', 60_000, async () => (await ops.allowOps(ref, GRACE_DELETE_ADAPTER)).allowed);

    expect(await deleteError(sb, 'serving'), 'the delete once granted').toBeUndefined();
    await waitFor('the Pod to be gone', 60_000, async () => {
      const found = await sb.core.readNamespacedPod({ name: 'serving', namespace: sb.namespace }).catch(() => undefined);
      return found === undefined || found.metadata?.deletionTimestamp !== undefined;
    });
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
