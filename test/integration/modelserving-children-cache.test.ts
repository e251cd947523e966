// The worker-local cache of ModelServing children (functions/reconcile-modelserving/children-cache.ts)
// against the real API server: it serves what its watches delivered, it is "caught up" with a write
// only once its watch has seen that write's resourceVersion, and a child event no reconcile read
// afterwards brings the ModelServing back (the watcher's stream and the cache's are two streams).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildrenCache, LAG_CHECK_MS } from '../../functions/reconcile-modelserving/children-cache.js';
import { LABEL_NAME } from '../../functions/reconcile-modelserving/plan/names.js';
import { kubeRequest } from '../../kube/raw.js';
import { createLogger } from '../../runtime/log.js';
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
});
