import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient, type OperationAdapter } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { isConflict } from '../../functions/ops-lifecycle/pod-access/pod-api.js';
import { perIdKey } from '../../functions/ops-lifecycle/protocol/index.js';
import { createControlledPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startTestWebhook, type TestWebhook } from '../fixtures/ops-lifecycle-webhook.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const ID = 'collaset';
const TYPE = 'update';
const nanosNow = () => (BigInt(Date.now()) * 1_000_000n).toString();

// Scenario 2 of issue 15: kuperator's Go client does BeginWithCleaningOld as two whole-object updates, Undo
// (undo-operation-type/<id>) and then Begin (operating/<id> if absent, operation-type/<id>) on the object the
// first update returned. kuperator's webhook clears the undone ID inside the first write, so Begin starts a clean
// round. Without that, the undo label is still on the Pod when Begin lands, and the reconciler strips the new
// round with the old one while the caller was told updated=true.
describe('ops-lifecycle webhook: Undo then Begin as a kuperator Go client writes them', () => {
  let sb: TestSandbox;
  let hook: TestWebhook;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-undo');
    hook = await startTestWebhook(sb);
    ripple = await startRipple(sb, [definition({})]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await hook?.stop();
    await sb?.cleanup();
  });

  /** controller-runtime's client.Update: the whole object, carrying the resourceVersion it was read at. */
  async function update(pod: V1Pod, edit: (labels: Record<string, string>) => void): Promise<V1Pod> {
    const labels = { ...(pod.metadata?.labels ?? {}) };
    edit(labels);
    return sb.core.replaceNamespacedPod({ name: pod.metadata?.name ?? '', namespace: sb.namespace, body: { ...pod, metadata: { ...pod.metadata, labels } } });
  }

  /** A Go reconcile that retries the whole step on a conflict, reading the Pod again. */
  async function withRetry(step: (pod: V1Pod) => Promise<V1Pod>): Promise<V1Pod> {
    for (let i = 0; ; i++) {
      const pod = await sb.core.readNamespacedPod({ name: 'go', namespace: sb.namespace });
      try {
        return await step(pod);
      } catch (err) {
        if (!isConflict(err) || i > 10) throw err;
      }
    }
  }

  it('BeginWithCleaningOld keeps the new round (scenario 2)', async () => {
    const ref = await createControlledPod(sb, 'go');
    await waitServing(sb, ref);
    const ops = operationClient({ kc: sb.kc });
    const adapter: OperationAdapter = { id: ID, type: TYPE, allowMultiType: true };
    // The first round is under way (granted operate) when the operator decides to start over.
    await ops.begin(ref, adapter);
    await waitFor('the first round to be granted operate', 30_000, async () => (await ops.allowOps(ref, adapter)).allowed);
    const firstRound = (await sb.core.readNamespacedPod({ name: 'go', namespace: sb.namespace })).metadata?.labels?.[perIdKey('operating', ID)];

    // Undo: one update. Then Begin: the next update, from the object the Undo returned (the Go client's
    // object is updated in place by client.Update).
    let undone = await withRetry((pod) => update(pod, (l) => void (l[perIdKey('undoOperationType', ID)] = TYPE)));
    const begun = await withRetry(async (fresh) => {
      const pod = undone.metadata?.resourceVersion === fresh.metadata?.resourceVersion ? undone : fresh;
      return update(pod, (l) => {
        if (!(perIdKey('operating', ID) in l)) l[perIdKey('operating', ID)] = nanosNow();
        l[perIdKey('operationType', ID)] = TYPE;
      }).catch((err: unknown) => {
        undone = fresh;
        throw err;
      });
    });
    const secondRound = begun.metadata?.labels?.[perIdKey('operating', ID)];
    expect(secondRound, 'Begin wrote its operating label').toBeDefined();
    expect(secondRound, 'the undone round was cleared before Begin, so Begin stamped a fresh operating').not.toBe(firstRound);
    expect(begun.metadata?.labels).not.toHaveProperty(perIdKey('undoOperationType', ID));

    // The new round runs its course: it is granted operate, with the operating label Begin wrote.
    const granted = await waitFor('the new round to be granted operate', 30_000, async () => {
      const answer = await ops.allowOps(ref, adapter);
      return answer.allowed ? answer.pod : undefined;
    });
    expect(granted.metadata.labels?.[perIdKey('operating', ID)]).toBe(secondRound);
    expect(await ops.isDuringOps(ref, adapter)).toBe(true);
  });
});
