// The worker-local cache of ModelServing children (functions/reconcile-modelserving/children-cache.ts)
// against the real API server: it serves what its watches delivered, it is "caught up" with a write
// only once its watch has seen that write's resourceVersion, and a child event no reconcile read
// afterwards brings the ModelServing back (the watcher's stream and the cache's are two streams).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildrenCache, childrenCacheFor, LAG_CHECK_MS } from '../../functions/reconcile-modelserving/children-cache.js';
import { LABEL_NAME } from '../../functions/reconcile-modelserving/plan/names.js';
import { msManifest } from '../fixtures/modelserving-fixtures.js';
import { kubeRequest } from '../../kube/raw.js';
import { createLogger } from '../../base/log.js';
import { inReconcileScope, throwIfLeaseLost } from '../../base/reconcile-scope.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const log = createLogger('test-children-cache', process.env.LOG_LEVEL ?? 'warn');

async function createService(sb: TestSandbox, name: string, owner: string): Promise<string> {
  const created = (await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/services`, {
    method: 'POST',
    body: { metadata: { name, labels: { [LABEL_NAME]: owner } }, spec: { clusterIP: 'None', selector: { app: name } } },
  })) as { metadata: { resourceVersion: string } };
  return created.metadata.resourceVersion;
}

describe('ModelServing children cache', () => {
  let sb: TestSandbox;
  let cache: ChildrenCache;
  const enqueued: string[] = [];
  const enqueue = async (key: string) => void enqueued.push(key);

  beforeAll(async () => {
    sb = await openSandbox('ms-cache');
    cache = new ChildrenCache(sb.kc, sb.namespace, log, () => undefined);
    await waitFor('the cache to list', 60_000, async () => cache.ready());
  });
  afterAll(async () => {
    await cache?.stop();
    await sb?.cleanup();
  });

  it('serves the children its watches delivered, and is caught up with a write only once it saw its version', async () => {
    const rv = await createService(sb, 'a-0-main-0-0', 'a');
    // A version no watch has delivered (far ahead of this write) is never caught up with.
    const ahead = { versions: { services: String(BigInt(rv) + 1_000_000n) }, unknown: false };
    expect(await cache.waitFor(ahead, 300)).toBe(false);
    // A write of unknown outcome never is either: the reconcile lists.
    expect(await cache.waitFor({ versions: {}, unknown: true }, 300)).toBe(false);
    expect(await cache.waitFor({ versions: { services: rv }, unknown: false }, 30_000)).toBe(true);
    const children = cache.read('a', enqueue);
    expect(children.services.map((s) => s.metadata?.name)).toEqual(['a-0-main-0-0']);
    expect(children.pods).toEqual([]);
    expect(children.controllerRevisions).toEqual([]);
    // Another ModelServing's children are not this one's.
    expect(cache.read('b', enqueue).services).toEqual([]);
  });

  it('brings a ModelServing back when a child event is not followed by a read, and only then', async () => {
    enqueued.length = 0;
    // Both were read (above); now a child event for each.
    const rvA = await createService(sb, 'a-1-main-0-0', 'a');
    const rvB = await createService(sb, 'b-0-main-0-0', 'b');
    // b's reconcile reads after its event (as when the watcher's event wakes it); a's does not.
    await waitFor('the cache to see both Services', 30_000, async () => cache.caughtUp({ versions: { services: rvB }, unknown: false }) && cache.caughtUp({ versions: { services: rvA }, unknown: false }));
    expect(cache.read('b', enqueue).services.map((s) => s.metadata?.name)).toEqual(['b-0-main-0-0']);
    await waitFor('a to be brought back', 30_000, async () => enqueued.length > 0);
    // Well past the check for b as well: every enqueue there was.
    await new Promise((r) => setTimeout(r, LAG_CHECK_MS * 2));
    expect(enqueued).toEqual([`${sb.namespace}/a`]);
  });

  it('serves the ModelServing itself, and brings it back when its spec changes after a read that did not see it', async () => {
    enqueued.length = 0;
    const created = (await kubeRequest(sb.kc, `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${sb.namespace}/modelservings`, {
      method: 'POST',
      body: msManifest('m', sb.namespace, { replicas: 0 }),
    })) as { metadata: { resourceVersion: string } };
    await waitFor('the cache to hold the ModelServing', 30_000, async () => cache.caughtUp({ versions: { modelservings: created.metadata.resourceVersion }, unknown: false }));
    expect(cache.read('m', enqueue).modelServing?.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    // A status-only write (the function's own, say) is not a trigger: nothing is brought back for it.
    await kubeRequest(sb.kc, `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${sb.namespace}/modelservings/m/status`, {
      method: 'PATCH',
      body: { status: { replicas: 0 } },
      contentType: 'application/merge-patch+json',
    });
    // A spec change no read follows (the reconcile the watcher woke for it read before the cache had it) is.
    const scaled = (await kubeRequest(sb.kc, `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${sb.namespace}/modelservings/m`, {
      method: 'PATCH',
      body: { spec: { replicas: 1 } },
      contentType: 'application/merge-patch+json',
    })) as { metadata: { resourceVersion: string } };
    await waitFor('the ModelServing to be brought back for its spec change', 30_000, async () => enqueued.length > 0).catch((err: unknown) => {
      throw new Error(`${String(err)} (cache holds ${cache.read('m', enqueue).modelServing?.metadata.resourceVersion}, scaled at ${scaled.metadata.resourceVersion})`);
    });
    await new Promise((r) => setTimeout(r, LAG_CHECK_MS * 2));
    expect(enqueued).toEqual([`${sb.namespace}/m`]);
  });

  it('outlives the reconcile that started it: that reconcile losing its lease fails none of its lists or enqueues', async () => {
    // The handler starts the process-wide cache inside a reconcile (base/reconcile-scope.ts); its
    // requests and Redis scripts must not inherit that reconcile's claim.
    const lost = new AbortController();
    const started = await inReconcileScope({ signal: lost.signal, token: 'lost', sendBy: Date.now() + 60_000, aliveUntil: Date.now() + 61_000 }, async () => childrenCacheFor(sb.kc, sb.namespace));
    lost.abort('lease lost');
    try {
      await waitFor('the cache started by a reconcile that lost its lease to list', 60_000, async () => started.ready());
      // As the host's enqueue does (queue/run-script.ts): refused inside a reconcile whose claim is lost.
      const brought: string[] = [];
      const enqueueLikeTheHost = async (key: string) => {
        throwIfLeaseLost('Redis script');
        brought.push(key);
      };
      expect(started.read('c', enqueueLikeTheHost).services).toEqual([]);
      await createService(sb, 'c-0-main-0-0', 'c');
      await waitFor('c to be brought back by an enqueue outside the lost claim', 30_000, async () => brought.length > 0);
      expect(brought).toEqual([`${sb.namespace}/c`]);

      // The rule-2 bookkeeping of a ModelServing without children is dropped at the idle tick; one
      // with children is kept.
      started.read('gone', enqueueLikeTheHost);
      expect(started.tracked).toBe(2);
      started.prune();
      expect(started.tracked).toBe(1);
      expect(started.read('c', enqueueLikeTheHost).services.map((s) => s.metadata?.name)).toEqual(['c-0-main-0-0']);
    } finally {
      await started.stop();
    }
  });
});
