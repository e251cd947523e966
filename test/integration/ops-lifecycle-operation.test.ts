import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient, type OperationAdapter, type OperationClient } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { Label, perIdKey, permissionKey, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import {
  conditionOf,
  createControlledPod,
  labelsOfId,
  mustReadPod,
  recordPod,
  sleep,
  transitions,
  waitPod,
  waitServing,
} from '../fixtures/ops-lifecycle-pods.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The lifecycle function runs in-process against the real API server and Redis; the tests play the operation
// controller through the client API, as an operator would. Pods run on KWOK nodes.
describe('ops-lifecycle: operations on the sandbox', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  let ops: OperationClient;

  beforeAll(async () => {
    sb = await openSandbox('opslc-op');
    ripple = await startRipple(sb, [definition({})]);
    ops = operationClient({ kc: sb.kc });
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('one operation end to end: labels at each stage, gate False then True, service-available back', async () => {
    const history = await recordPod(sb, 'e2e');
    const ref = await createControlledPod(sb, 'e2e');
    await waitServing(sb, ref);
    const adapter: OperationAdapter = { id: 'upgrade', type: 'update', allowMultiType: true };

    const begun = await ops.begin(ref, adapter);
    expect(begun.updated).toBe(true);
    expect(begun.pod.metadata.labels?.[perIdKey('operating', 'upgrade')]).toMatch(/^\d{19}$/);
    expect((await ops.begin(ref, adapter)).updated).toBe(false); // idempotent while it runs
    expect(await ops.isDuringOps(ref, adapter)).toBe(true);

    await waitFor('operate to be granted', 30_000, async () => (await ops.allowOps(ref, adapter)).allowed);
    const operating = await mustReadPod(sb, ref);
    const labels = operating.metadata.labels ?? {};
    expect(conditionOf(operating, SERVICE_READY_CONDITION)).toBe('False');
    expect(labels[perIdKey('operate', 'upgrade')]).toMatch(/^\d{19}$/);
    expect(labels[permissionKey('update')]).toMatch(/^\d{19}$/);
    expect(labels).not.toHaveProperty(Label.serviceAvailable);

    expect((await ops.finish(ref, adapter)).updated).toBe(true);
    expect(await ops.isDuringOps(ref, adapter)).toBe(false);
    await waitServing(sb, ref);
    await sleep(500); // the watch may still be delivering the last versions
    history.stop();

    const s = history.snapshots;
    const has = (i: number, key: string) => key in (s[i]?.labels ?? {});
    const first = (pred: (i: number) => boolean, from = 0) => {
      for (let i = from; i < s.length; i++) if (pred(i)) return i;
      return -1;
    };
    const iBegun = first((i) => has(i, perIdKey('operating', 'upgrade')));
    const iPreparing = first((i) => has(i, perIdKey('preparing', 'upgrade')), iBegun);
    const iOperate = first((i) => has(i, perIdKey('operate', 'upgrade')), iPreparing);
    const iCompleting = first((i) => has(i, perIdKey('completing', 'upgrade')), iOperate);
    const iBack = first((i) => has(i, Label.serviceAvailable), iCompleting);
    expect(iBegun).toBeGreaterThan(0);
    expect([iPreparing, iOperate, iCompleting, iBack].every((i) => i > iBegun)).toBe(true);

    // Preparing: pre-checked with the type's permission, out of service, and the gate goes False while preparing.
    expect(s[iPreparing]?.labels).toMatchObject({
      [perIdKey('operationType', 'upgrade')]: 'update',
      [perIdKey('preChecked', 'upgrade')]: expect.stringMatching(/^\d{19}$/),
      [permissionKey('update')]: expect.stringMatching(/^\d{19}$/),
    });
    expect(has(iPreparing, Label.serviceAvailable)).toBe(false);
    // operate is granted only on a version that already shows the gate False.
    expect(s[iOperate]?.serviceReady).toBe('False');
    expect(s.slice(iPreparing, iOperate).some((v) => v.serviceReady === 'False')).toBe(true);
    // Completing: operated with the type moved to done-operation-type; the gate goes True while completing.
    expect(s[iCompleting]?.labels[perIdKey('doneOperationType', 'upgrade')]).toBe('update');
    expect(has(iCompleting, perIdKey('operationType', 'upgrade'))).toBe(false);
    expect(has(iCompleting, permissionKey('update'))).toBe(false);
    expect(s.slice(iCompleting, iBack).some((v) => v.serviceReady === 'True' && perIdKey('completing', 'upgrade') in v.labels)).toBe(true);
    // Back: every label of the ID gone.
    expect(labelsOfId(s[iBack]?.labels ?? {}, 'upgrade')).toEqual([]);
    // The gate moved True → False → True exactly once over the operation (no flapping).
    expect(transitions(s.slice(iBegun).map((v) => v.serviceReady))).toEqual(['True', 'False', 'True']);
  });

  it('operationDelaySeconds=10 delays operate by at least 10 s', async () => {
    const ref = await createControlledPod(sb, 'delay');
    await waitServing(sb, ref);
    const adapter: OperationAdapter = { id: 'slow', type: 'restart', allowMultiType: true };
    await ops.begin(ref, adapter);
    const granted = await waitPod(sb, ref, 'operate granted', (p) => perIdKey('operate', 'slow') in (p.metadata.labels ?? {}));
    const operateAtMs = Number(BigInt(granted.metadata.labels?.[perIdKey('operate', 'slow')] ?? '0') / 1_000_000n);

    const firstAnswer = await ops.allowOps(ref, adapter, { operationDelaySeconds: 10 });
    expect(firstAnswer.allowed).toBe(false);
    expect(firstAnswer.requeueAfterMs).toBeGreaterThan(5_000);
    expect(firstAnswer.requeueAfterMs).toBeLessThanOrEqual(10_000);

    // An operator honouring requeueAfter: no polling faster than it is told to.
    let asked = 1;
    let answer = firstAnswer;
    while (!answer.allowed) {
      await sleep(answer.requeueAfterMs ?? 200);
      answer = await ops.allowOps(ref, adapter, { operationDelaySeconds: 10 });
      asked++;
    }
    const allowedAtMs = Date.now();
    expect(allowedAtMs - operateAtMs).toBeGreaterThanOrEqual(10_000);
    expect(asked).toBeLessThanOrEqual(3);

    await ops.finish(ref, adapter);
    const back = await waitServing(sb, ref);
    const availableAtMs = Number(BigInt(back.metadata.labels?.[Label.serviceAvailable] ?? '0') / 1_000_000n);
    // kuperator's e2e check: service-available comes back ≥ 10 s after the operate timestamp.
    expect(availableAtMs - operateAtMs).toBeGreaterThanOrEqual(10_000);
  });

  it('two operation types on one Pod at once: per-type permissions, one shared barrier', async () => {
    const ref = await createControlledPod(sb, 'two');
    await waitServing(sb, ref);
    const update: OperationAdapter = { id: 'upd', type: 'update', allowMultiType: false };
    const restart: OperationAdapter = { id: 'rst', type: 'restart', allowMultiType: false };
    await ops.begin(ref, update);
    await ops.begin(ref, restart);

    await waitFor('both operators allowed', 30_000, async () => (await ops.allowOps(ref, update)).allowed && (await ops.allowOps(ref, restart)).allowed);
    const both = (await mustReadPod(sb, ref)).metadata.labels ?? {};
    expect(both).toHaveProperty(permissionKey('update'));
    expect(both).toHaveProperty(permissionKey('restart'));
    expect(both[perIdKey('operationType', 'upd')]).toBe('update');
    expect(both[perIdKey('operationType', 'rst')]).toBe('restart');

    // One operator done: it is not handed back while the other still operates.
    await ops.finish(ref, update);
    await sleep(2_000);
    const half = await mustReadPod(sb, ref);
    const halfLabels = half.metadata.labels ?? {};
    expect(halfLabels).toHaveProperty(perIdKey('operate', 'upd'));
    expect(halfLabels).not.toHaveProperty(perIdKey('operated', 'upd'));
    expect(halfLabels).not.toHaveProperty(perIdKey('completing', 'upd'));
    expect(conditionOf(half, SERVICE_READY_CONDITION)).toBe('False');

    await ops.finish(ref, restart);
    const back = await waitServing(sb, ref);
    expect(labelsOfId(back.metadata.labels ?? {}, 'upd')).toEqual([]);
    expect(labelsOfId(back.metadata.labels ?? {}, 'rst')).toEqual([]);
  });

  it('undo clears every label of its ID (and its permission); beginWithCleaningOld starts a fresh round', async () => {
    const ref = await createControlledPod(sb, 'undo');
    await waitServing(sb, ref);
    const adapter: OperationAdapter = { id: 'u1', type: 'update', allowMultiType: true };
    await ops.begin(ref, adapter);
    const operate = await waitPod(sb, ref, 'operate granted', (p) => perIdKey('operate', 'u1') in (p.metadata.labels ?? {}));
    expect(labelsOfId(operate.metadata.labels ?? {}, 'u1').length).toBeGreaterThanOrEqual(3);

    const undone = await ops.undo(ref, adapter);
    expect(undone.updated).toBe(true);
    const labels = undone.pod.metadata.labels ?? {};
    expect(labelsOfId(labels, 'u1')).toEqual([]);
    expect(labels).not.toHaveProperty(permissionKey('update'));
    await waitServing(sb, ref);

    // A second round, then a restart of it: one write, a new operating timestamp, the old round's labels gone.
    const first = await ops.begin(ref, adapter);
    const firstTs = first.pod.metadata.labels?.[perIdKey('operating', 'u1')];
    await waitPod(sb, ref, 'preparing or further', (p) => labelsOfId(p.metadata.labels ?? {}, 'u1').length > 2);
    await sleep(5);
    const again = await ops.beginWithCleaningOld(ref, adapter);
    const againLabels = again.pod.metadata.labels ?? {};
    expect(againLabels[perIdKey('operating', 'u1')]).not.toBe(firstTs);
    expect(labelsOfId(againLabels, 'u1').sort()).toEqual([perIdKey('operating', 'u1'), perIdKey('operationType', 'u1')].sort());
    await waitFor('the fresh round to reach operate', 30_000, async () => (await ops.allowOps(ref, adapter)).allowed);
    await ops.finish(ref, adapter);
    await waitServing(sb, ref);
  });
});
