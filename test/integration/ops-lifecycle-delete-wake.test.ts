// Issue 15 scenario 7: an owner waiting in deleteThroughLifecycle must not poll its Pod. A watch of exactly that Pod
// ends the wait when the Pod changes: with `wake` it calls the owner back; by default (no option) the waiting
// answer's `waitForChange()` resolves. While nothing changes the owner is not woken, and its requeue is only the slow
// fallback, so it makes no repeated GETs of the Pod.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cooperatorFor,
  deleteThroughLifecycle,
  syncCooperation,
  type Cooperator,
  type LifecycleClientDeps,
  type PodRef,
  withLifecycle,
} from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { readPod } from '../../functions/ops-lifecycle/pod-access/pod-api.js';
import { SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { armedPodWakes, podChanged, podWakeWatches, setWakeWatchLimit, stopPodWakes } from '../../functions/ops-lifecycle/pod-access/pod-wake.js';
import { stopControlledPodCaches } from '../../functions/ops-lifecycle/pod-access/pod-cache.js';
import { createLogger } from '../../base/log.js';
import { inReconcileScope } from '../../base/reconcile-scope.js';
import { countApiRequests } from '../harness/api-requests.js';
import { cleanupWithoutFinalizers, conditionOf, countGets, createControlledPod, mustReadPod, recordPod, sleep, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

describe('ops-lifecycle: deleteThroughLifecycle waits on a watch of the pod (scenario 7)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  let deps: LifecycleClientDeps;
  const log = createLogger('test-delete-wake', process.env.LOG_LEVEL ?? 'warn');

  async function cooperate(ref: PodRef, cooperator: Cooperator, selected: boolean) {
    return syncCooperation(deps, ref, cooperator, { selected });
  }

  /**
   * Waits until the lifecycle has nothing left to write on these Pods, held in Preparing by a cooperator: the gate
   * False, the sandbox's Ready False after it (the last writes of that state), and no new version for 1.5 s.
   */
  async function settledInPreparing(refs: readonly PodRef[]): Promise<void> {
    let last = '';
    await waitFor('the lifecycle to have nothing left to write', 60_000, async () => {
      const before = await Promise.all(refs.map((r) => mustReadPod(sb, r)));
      last = JSON.stringify(before.map((p) => ({ name: p.metadata.name, rv: p.metadata.resourceVersion, gate: conditionOf(p, SERVICE_READY_CONDITION), ready: conditionOf(p, 'Ready') })));
      if (!before.every((p) => conditionOf(p, SERVICE_READY_CONDITION) === 'False' && conditionOf(p, 'Ready') === 'False')) return false;
      await sleep(1_500);
      const after = await Promise.all(refs.map((r) => mustReadPod(sb, r)));
      return before.every((p, i) => p.metadata.resourceVersion === after[i]?.metadata.resourceVersion);
    }).catch((err: unknown) => {
      throw new Error(`${String(err)} (last seen: ${last})`);
    });
  }

  beforeAll(async () => {
    sb = await openSandbox('opslc-wake');
    ripple = await startRipple(sb, [definition({})]);
    deps = { kc: sb.kc };
  });
  afterAll(async () => {
    await ripple?.stop();
    await stopPodWakes();
    await stopControlledPodCaches();
    await cleanupWithoutFinalizers(sb);
  });

  it('while a cooperator holds the pod the owner is not woken and makes no GETs; its release wakes the owner once', async () => {
    await sb.core.createNamespacedService({ namespace: sb.namespace, body: { metadata: { name: 'held-traffic' }, spec: { selector: { app: 'held' }, ports: [{ port: 80 }] } } });
    const cooperator = cooperatorFor({ kind: 'Service', namespace: sb.namespace, name: 'held-traffic' });
    const ref = await createControlledPod(sb, 'held');
    await waitServing(sb, ref);
    await cooperate(ref, cooperator, true);
    const target = { ...ref, uid: (await mustReadPod(sb, ref)).metadata.uid };

    let wakes = 0;
    const wake = { onChange: async () => void wakes++, log };
    const ask = () => deleteThroughLifecycle(deps, target, { wake });
    const gets = countGets(`/namespaces/${ref.namespace}/pods/${ref.name}`);
    try {
      // Begun, then woken by the lifecycle's own steps until it settles in Preparing (the cooperator holds it).
      let answer = await ask();
      expect(answer).toMatchObject({ state: 'waiting', stage: 'Begun' });
      await waitFor('the owner to wait in Preparing', 30_000, async () => {
        if (wakes === 0) return false;
        wakes = 0;
        answer = await ask();
        return answer.state === 'waiting' && answer.stage === 'Preparing';
      });
      // The fallback is slow: the owner relies on the watch, not on a poll.
      expect(answer).toEqual({ state: 'waiting', stage: 'Preparing', requeueAfterMs: 60_000 });

      // Nothing changes while the cooperator holds the Pod (the lifecycle has written everything it can).
      await settledInPreparing([ref]);
      wakes = 0;
      answer = await ask();
      expect(answer).toMatchObject({ state: 'waiting', stage: 'Preparing' });
      const getsBefore = gets.count();
      // An owner that polled every 2 s (the default pollMs) would have read the Pod twice in this window.
      await sleep(4_000);
      expect(wakes).toBe(0);
      expect(gets.count() - getsBefore).toBe(0);
      expect(armedPodWakes()).toBe(1);

      // The cooperator lets go: that write wakes the owner, and the next ask deletes.
      await cooperate(ref, cooperator, false);
      await waitFor('the owner to be woken by the release', 30_000, async () => wakes > 0);
      const done = await waitFor('deleteThroughLifecycle to delete', 30_000, async () => {
        const r = await ask();
        return r.state === 'deleted' ? r : undefined;
      });
      expect(done.how).toBe('deleted');
      await waitFor('the Pod to be gone', 30_000, async () => (await readPod(sb.kc, ref)) === undefined);
      // The Pod's deletion fires its wake watch, which then closes: none is left open for WAKE_WATCH_MAX_MS.
      await waitFor('the wake watch to close after the Pod is gone', 30_000, async () => armedPodWakes() === 0).catch((err: unknown) => {
        throw new Error(`${String(err)} (armed wakes: ${armedPodWakes()})`);
      });
    } finally {
      gets.stop();
    }
  });

  it('a Pod deleted before the wake watch first lists it wakes the waiter at that list, not at the fallback, and the watch closes', async () => {
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: { metadata: { name: 'gone-early' }, spec: { containers: [{ name: 'c', image: 'busybox' }], terminationGracePeriodSeconds: 0 } },
    });
    const ref = { namespace: sb.namespace, name: 'gone-early' };
    // The version the owner planned from, read while the Pod still existed.
    const stale = await mustReadPod(sb, ref);
    await sb.core.deleteNamespacedPod({ name: ref.name, namespace: ref.namespace, gracePeriodSeconds: 0 });
    await waitFor('the Pod to be gone', 30_000, async () => (await readPod(sb.kc, ref)) === undefined);
    const armedBefore = armedPodWakes();
    const started = Date.now();
    // A fallback far past the wait allowed below: only the watch's first list can end this wait in time.
    const changed = podChanged(sb.kc, stale, log, 300_000);
    const woke = await Promise.race([changed.then(() => true), sleep(30_000).then(() => false)]);
    expect(woke, `waited ${Date.now() - started} ms; armed wakes ${armedPodWakes()} (before ${armedBefore})`).toBe(true);
    await waitFor('the wake watch to close', 30_000, async () => armedPodWakes() === armedBefore).catch((err: unknown) => {
      throw new Error(`${String(err)} (armed wakes: ${armedPodWakes()}, before ${armedBefore})`);
    });
  });

  it('a wake watch asked for by a reconcile that loses its lease during the first list still fires on the Pod\'s next change', async () => {
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: { metadata: { name: 'lease-lost' }, spec: { containers: [{ name: 'c', image: 'busybox' }], terminationGracePeriodSeconds: 0 } },
    });
    const ref = { namespace: sb.namespace, name: 'lease-lost' };
    const planned = await mustReadPod(sb, ref);
    const armedBefore = armedPodWakes();
    const lease = new AbortController();
    let changed: Promise<void> | undefined;
    await inReconcileScope({ signal: lease.signal, token: 'test', sendBy: Date.now() + 600_000, aliveUntil: Date.now() + 601_000 }, async () => {
      changed = podChanged(sb.kc, planned, log, 300_000);
    });
    // The reconcile that asked loses its lease at once, while the watch's first LIST is in flight.
    lease.abort(new Error('lease lost (test)'));
    await sb.core.patchNamespacedPod({ name: ref.name, namespace: ref.namespace, body: [{ op: 'add', path: '/metadata/labels', value: { touched: 'yes' } }] });
    const woke = await Promise.race([changed?.then(() => true), sleep(30_000).then(() => false)]);
    expect(woke, `armed wakes ${armedPodWakes()} (before ${armedBefore})`).toBe(true);
    await waitFor('the wake watch to close', 30_000, async () => armedPodWakes() === armedBefore).catch((err: unknown) => {
      throw new Error(`${String(err)} (armed wakes: ${armedPodWakes()}, before ${armedBefore})`);
    });
    await sb.core.deleteNamespacedPod({ name: ref.name, namespace: ref.namespace, gracePeriodSeconds: 0 });
  });

  it('by default (no option) the waiting answer carries `waitForChange`: lazy, resolves on the pod\'s next change, rejects at once on abort; no GETs while it waits', async () => {
    await sb.core.createNamespacedService({ namespace: sb.namespace, body: { metadata: { name: 'held-default' }, spec: { selector: { app: 'held-default' }, ports: [{ port: 80 }] } } });
    const cooperator = cooperatorFor({ kind: 'Service', namespace: sb.namespace, name: 'held-default' });
    const ref = await createControlledPod(sb, 'held-default');
    await waitServing(sb, ref);
    await cooperate(ref, cooperator, true);
    const target = { ...ref, uid: (await mustReadPod(sb, ref)).metadata.uid };
    const ask = () => deleteThroughLifecycle(deps, target);
    /** Whether `p` settles within `ms`. */
    const settles = (p: Promise<void> | undefined, ms: number) => Promise.race([p?.then(() => true) ?? Promise.resolve(true), sleep(ms).then(() => false)]);
    const gets = countGets(`/namespaces/${ref.namespace}/pods/${ref.name}`);
    try {
      const armedBefore = armedPodWakes();
      let answer = await ask();
      expect(answer).toMatchObject({ state: 'waiting', stage: 'Begun', requeueAfterMs: 60_000 });
      // Lazy: an answer nobody awaits opens no watch.
      expect(armedPodWakes()).toBe(armedBefore);
      // Each answer's `waitForChange()` ends with the lifecycle's next step, until it settles in Preparing.
      await waitFor('the owner to wait in Preparing', 30_000, async () => {
        if (answer.state === 'waiting' && !(await settles(answer.waitForChange?.(), 5_000))) return false;
        answer = await ask();
        return answer.state === 'waiting' && answer.stage === 'Preparing';
      }).catch((err: unknown) => {
        throw new Error(`${String(err)} (last answer: ${JSON.stringify(answer)})`);
      });
      expect(answer).toMatchObject({ state: 'waiting', stage: 'Preparing', requeueAfterMs: 60_000 });

      // Nothing changes while the cooperator holds the Pod (the lifecycle has written everything it can).
      await settledInPreparing([ref]);
      answer = await ask();
      expect(answer).toMatchObject({ state: 'waiting', stage: 'Preparing' });
      const waitForChange = answer.state === 'waiting' ? answer.waitForChange : undefined;
      expect(waitForChange).toBeDefined();
      expect(armedPodWakes()).toBe(armedBefore);

      // A handler whose signal aborts stops waiting at once (not at the 60 s fallback), and the watch it opened
      // closes since nobody else waits on it.
      const abort = new AbortController();
      const aborted = waitForChange?.(abort.signal).then(
        () => 'resolved',
        (err: unknown) => `rejected: ${String(err)}`,
      );
      expect(armedPodWakes()).toBe(armedBefore + 1);
      abort.abort(new Error('handler aborted'));
      const outcome = await Promise.race([aborted, sleep(5_000).then(() => 'still waiting after 5 s')]);
      expect(outcome).toBe('rejected: Error: handler aborted');
      expect(armedPodWakes()).toBe(armedBefore);

      const changed = waitForChange?.();
      const getsBefore = gets.count();
      // A caller that polled every 2 s would have read the Pod twice in this window.
      expect(await settles(changed, 4_000)).toBe(false);
      expect(gets.count() - getsBefore).toBe(0);

      // The cooperator lets go: that write ends the wait, and the next ask deletes.
      await cooperate(ref, cooperator, false);
      expect(await settles(changed, 30_000)).toBe(true);
      const done = await waitFor('deleteThroughLifecycle to delete', 30_000, async () => {
        const r = await ask();
        return r.state === 'deleted' ? r : undefined;
      });
      expect(done.how).toBe('deleted');
      await waitFor('the Pod to be gone', 30_000, async () => (await readPod(sb.kc, ref)) === undefined);
    } finally {
      gets.stop();
    }
  });
  /** Counts the watches of Pods in the test's namespace this process opens: all, and those of one Pod alone (fieldSelector). */
  function countPodWatches() {
    const path = `/api/v1/namespaces/${sb.namespace}/pods`;
    const all = countApiRequests('GET', (p, q) => p === path && q.get('watch') === 'true');
    const single = countApiRequests('GET', (p, q) => p === path && q.get('watch') === 'true' && (q.get('fieldSelector') ?? '').startsWith('metadata.name='));
    return {
      all: all.sent,
      single: single.sent,
      stop: () => {
        single.stop();
        all.stop();
      },
    };
  }

  it('N owners waiting on controlled pods of one namespace are served by the namespace\'s pod cache: at most 1 watch, none per pod; each still wakes on its own pod\'s next version', async () => {
    const N = 6;
    await sb.core.createNamespacedService({ namespace: sb.namespace, body: { metadata: { name: 'many-traffic' }, spec: { selector: { group: 'many' }, ports: [{ port: 80 }] } } });
    const cooperator = cooperatorFor({ kind: 'Service', namespace: sb.namespace, name: 'many-traffic' });
    const refs: PodRef[] = [];
    for (let i = 0; i < N; i++) {
      const name = `many-${i}`;
      await sb.core.createNamespacedPod({
        namespace: sb.namespace,
        body: withLifecycle<V1Pod>({ metadata: { name, labels: { group: 'many' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } }),
      });
      refs.push({ namespace: sb.namespace, name });
    }
    const targets: Array<PodRef & { uid?: string }> = [];
    for (const ref of refs) {
      await waitServing(sb, ref);
      await cooperate(ref, cooperator, true);
      targets.push({ ...ref, uid: (await mustReadPod(sb, ref)).metadata.uid });
    }
    const settles = (p: Promise<void> | undefined, ms: number) => Promise.race([p?.then(() => true) ?? Promise.resolve(true), sleep(ms).then(() => false)]);
    // Each owner begins and follows its lifecycle until the cooperator holds its Pod in Preparing.
    await Promise.all(
      targets.map(async (target) => {
        let answer = await deleteThroughLifecycle(deps, target);
        await waitFor(`${target.name} to wait in Preparing`, 60_000, async () => {
          if (answer.state === 'waiting' && !(await settles(answer.waitForChange?.(), 5_000))) return false;
          answer = await deleteThroughLifecycle(deps, target);
          return answer.state === 'waiting' && answer.stage === 'Preparing';
        }).catch((err: unknown) => {
          throw new Error(`${String(err)} (last answer: ${JSON.stringify(answer)})`);
        });
      }),
    );
    await settledInPreparing(refs);

    const armedBefore = armedPodWakes();
    const watchesBefore = podWakeWatches();
    // The recorder's own watch is opened before the count begins.
    const rec = await recordPod(sb, refs[0]?.name ?? '');
    const watches = countPodWatches();
    const woken = new Set<string>();
    try {
      const waits = await Promise.all(
        targets.map(async (target) => {
          const answer = await deleteThroughLifecycle(deps, target);
          expect(answer).toMatchObject({ state: 'waiting', stage: 'Preparing' });
          const waitForChange = answer.state === 'waiting' ? answer.waitForChange : undefined;
          expect(waitForChange, `${target.name}: waitForChange`).toBeDefined();
          const p = waitForChange?.() ?? Promise.resolve();
          // Wrapped: an async function returning the promise itself would wait for it.
          return { ended: p.then(() => void woken.add(target.name)) };
        }),
      );
      const state = () =>
        `armed ${armedPodWakes()} (before ${armedBefore}), per-pod watches ${podWakeWatches()} (before ${watchesBefore}), watches opened ${watches.all()} of which per pod ${watches.single()}, woken [${[...woken].join(', ')}]; ` +
        `versions of ${refs[0]?.name} seen: ${JSON.stringify(rec.snapshots.slice(-4))}`;
      expect(armedPodWakes(), state()).toBe(armedBefore + N);
      // Nothing changes meanwhile: no wait ends, and none of them opened a watch of its Pod alone.
      await sleep(3_000);
      expect(woken.size, state()).toBe(0);
      expect(podWakeWatches(), state()).toBe(watchesBefore);
      expect(watches.single(), state()).toBe(0);
      expect(watches.all(), state()).toBeLessThanOrEqual(1);

      // One cooperator lets go of one Pod: that Pod's next version ends its wait, and only its wait.
      const first = refs[0]?.name ?? '';
      await cooperate({ namespace: sb.namespace, name: first }, cooperator, false);
      await waitFor(`the wait on ${first} to end`, 30_000, async () => woken.has(first)).catch((err: unknown) => {
        throw new Error(`${String(err)} (${state()})`);
      });
      expect([...woken], state()).toEqual([first]);

      // The rest let go too: every wait ends, and the owners delete their Pods.
      for (const ref of refs.slice(1)) await cooperate(ref, cooperator, false);
      await waitFor('every wait to end', 30_000, async () => woken.size === N).catch((err: unknown) => {
        throw new Error(`${String(err)} (${state()})`);
      });
      await Promise.all(waits.map((w) => w.ended));
      expect(watches.single(), state()).toBe(0);
      expect(watches.all(), state()).toBeLessThanOrEqual(1);
      for (const target of targets) {
        await waitFor(`deleteThroughLifecycle to delete ${target.name}`, 60_000, async () => {
          const r = await deleteThroughLifecycle(deps, target);
          return r.state === 'deleted' ? r : undefined;
        });
      }
      await waitFor('no wait left behind', 30_000, async () => armedPodWakes() === armedBefore).catch((err: unknown) => {
        throw new Error(`${String(err)} (${state()})`);
      });
    } finally {
      rec.stop();
      watches.stop();
    }
  });

  it('per-pod wake watches are capped: past the limit a wait opens no watch and ends at its fallback', async () => {
    const names = ['capped-a', 'capped-b'];
    for (const name of names) {
      await sb.core.createNamespacedPod({ namespace: sb.namespace, body: { metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox' }], terminationGracePeriodSeconds: 0 } } });
    }
    const [a, b] = await Promise.all(names.map((name) => mustReadPod(sb, { namespace: sb.namespace, name })));
    if (!a || !b) throw new Error('pods not created');
    const watchesBefore = podWakeWatches();
    setWakeWatchLimit(watchesBefore + 1);
    const watches = countPodWatches();
    try {
      const state = () => `per-pod watches ${podWakeWatches()} (before ${watchesBefore}), watches opened ${watches.all()}, per pod ${watches.single()}`;
      // Uncontrolled Pods: the namespace cache does not hold them, so each would need a watch of its own.
      const aChanged = podChanged(sb.kc, a, log, 300_000);
      expect(podWakeWatches(), state()).toBe(watchesBefore + 1);
      const started = Date.now();
      const bChanged = podChanged(sb.kc, b, log, 3_000);
      expect(podWakeWatches(), `past the limit: ${state()}`).toBe(watchesBefore + 1);
      // b gets no watch: only its fallback ends its wait.
      const bWoke = await Promise.race([bChanged.then(() => true), sleep(30_000).then(() => false)]);
      expect(bWoke, state()).toBe(true);
      expect(Date.now() - started, 'ended by the 3 s fallback, not by a change').toBeGreaterThanOrEqual(2_900);
      // The watch under the limit still works.
      await sb.core.patchNamespacedPod({ name: 'capped-a', namespace: sb.namespace, body: [{ op: 'add', path: '/metadata/labels', value: { touched: 'yes' } }] });
      const aWoke = await Promise.race([aChanged.then(() => true), sleep(30_000).then(() => false)]);
      expect(aWoke, state()).toBe(true);
      expect(watches.single(), state()).toBe(1);
    } finally {
      setWakeWatchLimit();
      watches.stop();
      for (const name of names) await sb.core.deleteNamespacedPod({ name, namespace: sb.namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
    }
  });
});
