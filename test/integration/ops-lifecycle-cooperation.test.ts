import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AVAILABLE_CONDITIONS_ANNOTATION,
  cooperatorFor,
  deleteThroughLifecycle,
  Label,
  operationClient,
  PROTECTION_FINALIZER_PREFIX,
  syncCooperation,
  type Cooperator,
  type DeleteThroughLifecycleResult,
  type LifecycleClientDeps,
  type OperationAdapter,
  type PodRef,
} from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { readPod } from '../../functions/ops-lifecycle/pod-access/pod-api.js';
import { perIdKey, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { cleanupWithoutFinalizers, conditionOf, createControlledPod, mustReadPod, sleep, waitPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The test plays a traffic controller (the cooperation side) and an operator through the client API; the
// lifecycle function runs in-process. A real Service selects each Pod, so the expectation it records is not stale.
describe('ops-lifecycle: cooperation controllers on the sandbox', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  let deps: LifecycleClientDeps;
  const routed = new Set<string>();

  async function createService(name: string, app: string): Promise<Cooperator> {
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name }, spec: { selector: { app }, ports: [{ port: 80 }] } },
    });
    return cooperatorFor({ kind: 'Service', namespace: sb.namespace, name });
  }

  /** One reconcile of the traffic controller for one Pod. */
  async function cooperate(ref: PodRef, cooperator: Cooperator, selected = true) {
    return syncCooperation(deps, ref, cooperator, {
      selected,
      onLifecycleReady: async (pod) => void routed.add(pod.metadata.name),
      onLifecycleNotReady: async (pod) => void routed.delete(pod.metadata.name),
    });
  }

  beforeAll(async () => {
    sb = await openSandbox('opslc-coop');
    ripple = await startRipple(sb, [definition({})]);
    deps = { kc: sb.kc };
  });
  afterAll(async () => {
    await ripple?.stop();
    await cleanupWithoutFinalizers(sb);
  });

  it('an operation stays in Preparing until the cooperation controller removes its protection finalizer', async () => {
    const cooperator = await createService('traffic', 'held');
    const ref = await createControlledPod(sb, 'held');
    await waitServing(sb, ref);

    // The traffic controller takes the Pod: expected finalizer recorded, Pod routed, finalizer added.
    const taken = await cooperate(ref, cooperator);
    expect(taken).toMatchObject({ gone: false, lifecycleReady: true, updated: true });
    const held = await mustReadPod(sb, ref);
    expect(held.metadata.finalizers).toContain(cooperator.finalizer);
    expect(cooperator.finalizer.startsWith(`${PROTECTION_FINALIZER_PREFIX}/`)).toBe(true);
    expect(JSON.parse(held.metadata.annotations?.[AVAILABLE_CONDITIONS_ANNOTATION] ?? '{}')).toEqual({
      expectedFinalizers: { [cooperator.key]: cooperator.finalizer },
    });
    expect(routed.has('held')).toBe(true);

    const ops = operationClient(deps);
    const adapter: OperationAdapter = { id: 'roll', type: 'update', allowMultiType: true };
    await ops.begin(ref, adapter);
    await waitPod(sb, ref, 'preparing with the gate False', (p) =>
      perIdKey('preparing', 'roll') in (p.metadata.labels ?? {}) && conditionOf(p, SERVICE_READY_CONDITION) === 'False',
    );
    // Held: however long we wait, operate is not granted while the finalizer is on.
    await sleep(3_000);
    const still = await mustReadPod(sb, ref);
    expect(still.metadata.labels).toHaveProperty(perIdKey('preparing', 'roll'));
    expect(still.metadata.labels).not.toHaveProperty(perIdKey('operate', 'roll'));
    expect((await ops.allowOps(ref, adapter)).allowed).toBe(false);

    // The traffic controller sees the Pod is no longer lifecycle-ready: drains it and lets go.
    const released = await cooperate(ref, cooperator);
    expect(released).toMatchObject({ gone: false, lifecycleReady: false, updated: true });
    expect(routed.has('held')).toBe(false);
    await waitFor('operate after the finalizer is gone', 30_000, async () => (await ops.allowOps(ref, adapter)).allowed);

    // Completing waits for the expected finalizer to be back before the Pod is declared available.
    await ops.finish(ref, adapter);
    await waitPod(sb, ref, 'completing with the gate True', (p) =>
      perIdKey('completing', 'roll') in (p.metadata.labels ?? {}) && conditionOf(p, SERVICE_READY_CONDITION) === 'True',
    );
    await sleep(2_000);
    const completing = await mustReadPod(sb, ref);
    expect(completing.metadata.labels).toHaveProperty(perIdKey('completing', 'roll'));
    expect(completing.metadata.labels).not.toHaveProperty(Label.serviceAvailable);

    const retaken = await cooperate(ref, cooperator);
    expect(retaken).toMatchObject({ gone: false, lifecycleReady: true, updated: true });
    const back = await waitServing(sb, ref);
    expect(back.metadata.finalizers).toContain(cooperator.finalizer);
    expect(routed.has('held')).toBe(true);

    // The cooperator stops covering the Pod: finalizer and expectation both go.
    const dropped = await cooperate(ref, cooperator, false);
    expect(dropped).toMatchObject({ gone: false, updated: true });
    const free = await mustReadPod(sb, ref);
    expect(free.metadata.finalizers ?? []).not.toContain(cooperator.finalizer);
    expect(free.metadata.annotations?.[AVAILABLE_CONDITIONS_ANNOTATION]).toBe('{}');
  });

  it('deleteThroughLifecycle never deletes a Pod before its protection finalizer is gone', async () => {
    const cooperator = await createService('victim-traffic', 'victim');
    const ref = await createControlledPod(sb, 'victim');
    await waitServing(sb, ref);
    await cooperate(ref, cooperator);
    const uid = (await mustReadPod(sb, ref)).metadata.uid;
    const target = { ...ref, uid };

    const first = await deleteThroughLifecycle(deps, target, { pollMs: 250 });
    expect(first).toEqual({ state: 'waiting', stage: 'Begun', requeueAfterMs: 250 });
    const begun = await mustReadPod(sb, ref);
    expect(begun.metadata.labels).toHaveProperty(Label.preparingToDelete);
    expect(begun.metadata.labels?.[perIdKey('operationType', 'modelserving')]).toBe('delete');

    // The owner's reconcile loop: keeps asking while the traffic controller still holds the Pod.
    const answers: DeleteThroughLifecycleResult[] = [];
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      const r = await deleteThroughLifecycle(deps, target, { pollMs: 250 });
      answers.push(r);
      const pod = await mustReadPod(sb, ref);
      expect(pod.metadata.deletionTimestamp).toBeUndefined();
      await sleep(r.state === 'waiting' ? r.requeueAfterMs : 250);
    }
    expect(answers.every((a) => a.state === 'waiting' && a.stage === 'Preparing')).toBe(true);

    await cooperate(ref, cooperator); // not lifecycle-ready any more: deregistered, finalizer removed
    const done = await waitFor('deleteThroughLifecycle to delete', 30_000, async () => {
      const r = await deleteThroughLifecycle(deps, target, { pollMs: 250 });
      return r.state === 'deleted' ? r : undefined;
    });
    expect(done.how).toBe('deleted');
    await waitFor('the Pod to be gone', 30_000, async () => (await readPod(sb.kc, ref)) === undefined);
    expect(await deleteThroughLifecycle(deps, target)).toEqual({ state: 'deleted', how: 'gone' });
  });
});
