// Issue 15 scenario 7: the 60 s resync of ops-lifecycle must not cost one GET per controlled Pod. A resync
// reconcile of a Pod that did not change plans from the worker's watched cache of controlled Pods; a reconcile
// woken by a Pod event while the cache holds nothing newer than what was last planned from reads the Pod live
// (ops-lifecycle-cache-lag.test.ts: the cache lagging on purpose).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { controlledPodCacheFor, stopControlledPodCaches } from '../../functions/ops-lifecycle/pod-access/pod-cache.js';
import { countGets, createControlledPod, mustReadPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { createLogger } from '../../base/log.js';

describe('ops-lifecycle: resync reads the watched pod cache (scenario 7)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  const def = definition({});
  const log = createLogger('test-resync-cache', process.env.LOG_LEVEL ?? 'warn');

  beforeAll(async () => {
    sb = await openSandbox('opslc-cache');
    ripple = await startRipple(sb, [def]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
    // The worker-local pod cache watches until it idles out; this test process ends on its own.
    await stopControlledPodCaches();
  });

  it('a resync reconcile of an unchanged controlled pod makes no GET of it; an event reconcile with nothing newer in the cache reads it live', async () => {
    const ref = await createControlledPod(sb, 'cached');
    const serving = await waitServing(sb, ref);
    const key = `${ref.namespace}/${ref.name}`;
    const gets = countGets(`/namespaces/${ref.namespace}/pods/${ref.name}`);
    try {
      // The first reconciles start the cache; within the wait it has listed, and from then on a resync of this
      // unchanged pod answers from it. Each round counts the GETs of exactly one resync reconcile.
      let lastRound = -1;
      await waitFor('a resync reconcile that makes no GET of the pod', 30_000, async () => {
        const before = gets.count();
        await ripple.host.runHandler(def, { key, reason: 'resync', log });
        lastRound = gets.count() - before;
        return lastRound === 0;
      }).catch((err: unknown) => {
        throw new Error(`${String(err)} (the last resync reconcile made ${lastRound} GET(s) of ${key})`);
      });
      // Three more in a row: not a lucky one.
      const before = gets.count();
      for (let i = 0; i < 3; i++) await ripple.host.runHandler(def, { key, reason: 'resync', log });
      expect(gets.count() - before).toBe(0);

      // Woken by a Pod event, with the cache holding only what was just planned from: the change is not in it, read live.
      const beforeEvent = gets.count();
      await ripple.host.runHandler(def, { key, reason: 'event', log });
      expect(gets.count() - beforeEvent).toBe(1);
    } finally {
      gets.stop();
    }
    // Nothing was written: the pod is the version it settled at.
    expect((await mustReadPod(sb, ref)).metadata.resourceVersion).toBe(serving.metadata.resourceVersion);
  });

  it('a change of a pod after a resync read it from the cache brings the pod back (a resync job can fold an event in)', async () => {
    const ref = await createControlledPod(sb, 'folded');
    await waitServing(sb, ref);
    const key = `${ref.namespace}/${ref.name}`;
    const cache = controlledPodCacheFor(sb.kc, ref.namespace, log);
    await waitFor('the cache to hold the settled pod', 30_000, async () => {
      const hits = cache.hits;
      await ripple.host.runHandler(def, { key, reason: 'resync', log });
      return cache.hits > hits;
    });
    const late = cache.lateEnqueues;
    // Something the lifecycle reads (annotations) changes after the cached read.
    const current = await sb.core.readNamespacedPod({ name: ref.name, namespace: ref.namespace });
    current.metadata = { ...current.metadata, annotations: { ...current.metadata?.annotations, 'test.ripple.dev/touched': 'yes' } };
    await sb.core.replaceNamespacedPod({ name: ref.name, namespace: ref.namespace, body: current });
    await waitFor('the cache to enqueue the pod again', 30_000, async () => cache.lateEnqueues === late + 1);
  });
});
