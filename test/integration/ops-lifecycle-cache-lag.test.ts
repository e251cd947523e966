// Issue 15 scenario 7: reconciles woken by events plan from the worker's watched pod cache too, but a cache that
// lags the watcher's stream must be read past, never planned from. The cache's watch goes through a TCP proxy that
// the test blackholes, so it holds the pod as it was while the watcher (connected directly) sees every change: a
// real lagging stream. An operation begun then must go on from live reads, and nothing may be planned from the
// held pod, neither for the Pod event that woke a reconcile nor after this worker's own writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient, type OperationAdapter } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { controlledPodCacheFor, stopControlledPodCaches, type ControlledPodCache } from '../../functions/ops-lifecycle/pod-access/pod-cache.js';
import type { PodRef } from '../../functions/ops-lifecycle/pod-access/pod.js';
import { perIdKey } from '../../functions/ops-lifecycle/protocol/index.js';
import { kubeRequest } from '../../kube/raw.js';
import { createLogger } from '../../base/log.js';
import { countGets, createControlledPod, mustReadPod, sleep, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { TcpProxy } from '../harness/tcp-proxy.js';

/** Waits for the lifecycle to grant `adapter` operate on `ref`; a timeout says the labels last seen and `detail()`. */
async function waitGranted(ops: ReturnType<typeof operationClient>, ref: PodRef, adapter: OperationAdapter, when: string, detail: () => string): Promise<void> {
  let last: Record<string, string> = {};
  await waitFor(`the lifecycle to grant operate ${when}`, 60_000, async () => {
    const answer = await ops.allowOps(ref, adapter);
    last = answer.pod.metadata.labels ?? {};
    return answer.allowed;
  }).catch((err: unknown) => {
    throw new Error(`${String(err)} (pod labels: ${JSON.stringify(last)}; ${detail()})`);
  });
}

describe('ops-lifecycle: a lagging pod cache is read past, not planned from (scenario 7)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  let proxy: TcpProxy;
  let cache: ControlledPodCache;
  // No resync during the test: every reconcile is woken by an event or run by the test.
  const def = definition({ OPS_LIFECYCLE_RESYNC_MS: '3600000' });
  const log = createLogger('test-cache-lag', process.env.LOG_LEVEL ?? 'warn');

  beforeAll(async () => {
    sb = await openSandbox('opslc-lag');
    proxy = TcpProxy.forServer(sb.kc);
    await proxy.start();
    // Started before any reconcile could start it: the cache's own watch connects through the proxy.
    cache = controlledPodCacheFor(sb.kc, sb.namespace, log, proxy.kubeConfig(sb.kc));
    ripple = await startRipple(sb, [def]);
  });
  afterAll(async () => {
    proxy?.resume();
    await ripple?.stop();
    await stopControlledPodCaches();
    await proxy?.stop();
    await sb?.cleanup();
  });

  it('an operation begun while the cache is held goes on from live reads; no reconcile plans from the held pod', async () => {
    const ref = await createControlledPod(sb, 'lagged');
    const serving = await waitServing(sb, ref);
    const key = `${ref.namespace}/${ref.name}`;
    // Settled: the lifecycle has nothing left to write, and the cache holds that version.
    const settled = await waitFor('the pod to stay at one version and the cache to hold it', 30_000, async () => {
      const v = (await mustReadPod(sb, ref)).metadata.resourceVersion;
      await sleep(1_000);
      const now = (await mustReadPod(sb, ref)).metadata.resourceVersion;
      return now === v && cache.heldVersion(ref.namespace, ref.name) === now ? now : undefined;
    }).catch((err: unknown) => {
      throw new Error(`${String(err)} (serving at ${serving.metadata.resourceVersion}, cache holds ${cache.heldVersion(ref.namespace, ref.name)})`);
    });

    // The worker has planned from the settled pod, as it has once its queue drained: the event of its own last
    // write is consumed. (A reconcile woken by that event could rightly plan from the held cache, which holds
    // exactly that write; on a loaded machine its job might still be queued when the hold starts.)
    await ripple.host.runHandler(def, { key, reason: 'resync', log });

    const ops = operationClient({ kc: sb.kc });
    const adapter: OperationAdapter = { id: 'lag', type: 'update', allowMultiType: true };
    proxy.blackhole();
    const hits = cache.hits;
    const behind = cache.behind;
    try {
      // The operator's write goes straight to the API server; the watcher sees it, the cache does not.
      expect((await ops.begin(ref, adapter)).updated).toBe(true);
      await waitGranted(ops, ref, adapter, 'while the cache is held', () => `the cache holds ${cache.heldVersion(ref.namespace, ref.name)}, answered ${cache.hits - hits} read(s) and refused ${cache.behind - behind} since the hold`);
      const operating = await mustReadPod(sb, ref);
      expect(operating.metadata.labels?.[perIdKey('operate', adapter.id)]).toMatch(/^\d{19}$/);
      // The hold held: the cache never saw any of it, and every reconcile since read past it.
      expect(cache.heldVersion(ref.namespace, ref.name)).toBe(settled);
      expect(cache.hits).toBe(hits);
      expect(cache.behind).toBeGreaterThan(behind);

      // After this worker's own writes, not even a resync or a reconcile woken by an EndpointSlice plans from the
      // held pod: each reads it live (a GET; the cache answers none of them, checked below). The count is of this
      // process's GETs, and the running worker may reconcile the key beside the call on a loaded machine (seen: 2
      // GETs once in four runs while a build shared the CPU), so it is at least one, not exactly one.
      const gets = countGets(`/namespaces/${ref.namespace}/pods/${ref.name}`);
      try {
        for (const reason of ['resync', 'EndpointSlice:update', 'Pod:update']) {
          const before = gets.count();
          await ripple.host.runHandler(def, { key, reason, log });
          expect(gets.count() - before, `${reason}: the pod read live`).toBeGreaterThanOrEqual(1);
        }
      } finally {
        gets.stop();
      }
      expect(cache.hits).toBe(hits);
    } finally {
      proxy.resume();
    }

    // Released, the cache catches up, and the operation ends as usual.
    await waitFor('the cache to catch up', 60_000, async () => cache.heldVersion(ref.namespace, ref.name) === (await mustReadPod(sb, ref)).metadata.resourceVersion);
    expect((await ops.finish(ref, adapter)).updated).toBe(true);
    await waitServing(sb, ref);
  });

  it('with the cache keeping up, reconciles woken by the lifecycle’s own steps plan from it instead of a GET', async () => {
    const ref = await createControlledPod(sb, 'kept-up');
    await waitServing(sb, ref);
    const ops = operationClient({ kc: sb.kc });
    const adapter: OperationAdapter = { id: 'kept-up', type: 'update', allowMultiType: true };
    const hits = cache.hits;
    const behind = cache.behind;
    // Each step's write wakes the next reconcile, normally with the cache already holding exactly that write:
    // served from memory. The cache and the watcher's queue race, so a read may still go live; up to three
    // operations give the cache many chances, on a loaded machine too.
    for (let round = 0; round < 3 && cache.hits === hits; round++) {
      expect((await ops.begin(ref, adapter)).updated).toBe(true);
      await waitFor('operate to be granted', 60_000, async () => (await ops.allowOps(ref, adapter)).allowed);
      expect((await ops.finish(ref, adapter)).updated).toBe(true);
      await waitServing(sb, ref);
    }
    expect(cache.hits - hits, `reconciles served from the cache: ${cache.hits - hits}, read past it: ${cache.behind - behind}`).toBeGreaterThan(0);
  });

  // The queue hands each reconcile the resourceVersion of the newest Pod event behind it (minResourceVersion).
  // Here the worker's own record cannot tell the cache is stale: the cache holds a version past the one the worker
  // last planned from (a change the lifecycle ignores), so "newer than what I handled" holds — but the event that
  // woke the reconcile is newer still. Before the queue carried versions the reconcile planned from the held pod,
  // found nothing to do, wrote nothing (no 409 to save it), and the operation waited for the cache's stream.
  it("a Pod event newer than the held cache is honoured even when the cache is past this worker's own record", async () => {
    const ref = await createControlledPod(sb, 'woken-at');
    const serving = await waitServing(sb, ref);
    const key = `${ref.namespace}/${ref.name}`;
    const settled = await waitFor('the pod to stay at one version and the cache to hold it', 30_000, async () => {
      const v = (await mustReadPod(sb, ref)).metadata.resourceVersion;
      await sleep(1_000);
      const now = (await mustReadPod(sb, ref)).metadata.resourceVersion;
      return now === v && cache.heldVersion(ref.namespace, ref.name) === now ? now : undefined;
    }).catch((err: unknown) => {
      throw new Error(`${String(err)} (serving at ${serving.metadata.resourceVersion}, cache holds ${cache.heldVersion(ref.namespace, ref.name)})`);
    });
    // This worker plans from the settled pod: its record of the Pod is `settled`.
    await ripple.host.runHandler(def, { key, reason: 'resync', log });

    // A change no reconcile follows (status.message is not a lifecycle input, so the watcher's predicate drops it):
    // the cache moves past the worker's record, and nothing plans from it.
    await kubeRequest(sb.kc, `/api/v1/namespaces/${ref.namespace}/pods/${ref.name}/status`, {
      method: 'PATCH',
      body: { status: { message: 'not a lifecycle input' } },
      contentType: 'application/merge-patch+json',
    });
    const ahead = await waitFor('the cache to hold the status change', 30_000, async () => {
      const v = (await mustReadPod(sb, ref)).metadata.resourceVersion;
      return v !== settled && cache.heldVersion(ref.namespace, ref.name) === v ? v : undefined;
    }).catch((err: unknown) => {
      throw new Error(`${String(err)} (settled at ${settled}, cache holds ${cache.heldVersion(ref.namespace, ref.name)})`);
    });

    const ops = operationClient({ kc: sb.kc });
    const adapter: OperationAdapter = { id: 'woken-at', type: 'update', allowMultiType: true };
    proxy.blackhole();
    const hits = cache.hits;
    const behind = cache.behind;
    try {
      // The operator's Begin: the watcher enqueues it with its version; the held cache never sees it.
      expect((await ops.begin(ref, adapter)).updated).toBe(true);
      await waitGranted(ops, ref, adapter, 'while the cache is held past its own record', () => `the cache holds ${cache.heldVersion(ref.namespace, ref.name)} (settled ${settled}, ahead ${ahead}), answered ${cache.hits - hits} read(s) and refused ${cache.behind - behind} since the hold`);
      expect(cache.heldVersion(ref.namespace, ref.name)).toBe(ahead);
      expect(cache.hits, 'no reconcile planned from the held pod').toBe(hits);
      expect(cache.behind).toBeGreaterThan(behind);
    } finally {
      proxy.resume();
    }

    await waitFor('the cache to catch up', 60_000, async () => cache.heldVersion(ref.namespace, ref.name) === (await mustReadPod(sb, ref)).metadata.resourceVersion);
    expect((await ops.finish(ref, adapter)).updated).toBe(true);
    await waitServing(sb, ref);
  });
});
