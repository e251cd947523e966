// Issue 13 (converge cost): reconcile-modelserving plans from a worker-local watched cache of ModelServings (and their
// children) instead of a GET per reconcile. The cache must never be older than this function's own last write of the
// ModelServing (its status patch, its finalizer patch): the write's resourceVersion is a mark, and a cache that has
// not seen it is read past (a GET), never planned from. Here the cache's watches go through a TCP proxy the test
// blackholes, so the cache holds the ModelServing as it was while the function's own status write lands: a real
// lagging stream. A reconcile after that write must not compute status from the held object (it would write again,
// preconditioned on the held resourceVersion, and be refused with 409 over and over until the cache caught up).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childrenCacheFor, stopChildrenCaches, type ChildrenCache } from '../../functions/reconcile-modelserving/children-cache.js';
import { definition as modelServing, RECONCILE_MODELSERVING } from '../../functions/reconcile-modelserving/definition.js';
import { definition as emitEvents } from '../../functions/emit-events/definition.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { createLogger } from '../../base/log.js';
import { createMs, listPods, msManifest, mustGetMs, type MsRead } from '../fixtures/modelserving-fixtures.js';
import { countApiRequests } from '../harness/api-requests.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { TcpProxy } from '../harness/tcp-proxy.js';

const NAME = 'lag';
/** Pods no scheduler looked at for this long are reported on status: a status write that comes with time alone. */
const UNSCHEDULED_AFTER_SECONDS = 30;


/** What the cache holds of the ModelServing: its resourceVersion, or undefined. */
const heldVersion = (cache: ChildrenCache) => cache.read(NAME, async () => undefined).modelServing?.metadata.resourceVersion;

const unscheduledReported = (ms: MsRead) => JSON.stringify(ms.status ?? {}).includes('without being seen by scheduler');

describe('ModelServing cache: the function never plans from a ModelServing older than its own last write', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  let proxy: TcpProxy;
  let cache: ChildrenCache;
  let reconciles = 0;
  const failures: string[] = [];

  beforeAll(async () => {
    sb = await openSandbox('ms-cache-lag');
    proxy = TcpProxy.forServer(sb.kc);
    await proxy.start();
    const log = createLogger('test-ms-cache-lag', process.env.LOG_LEVEL ?? 'warn');
    // Started before any reconcile could start it, for the KubeConfig the reconciles use: its watches connect through the proxy.
    cache = childrenCacheFor(sb.kc, sb.namespace, log, proxy.kubeConfig(sb.kc));
    await waitFor('the cache to list and watch', 60_000, async () => cache.ready());
    const def = modelServing({ MODELSERVING_RESYNC_MS: '3600000' });
    const inner = def.reconcile;
    def.reconcile = async (req, ctx) => {
      try {
        return await inner(req, ctx);
      } catch (err) {
        failures.push(String(err));
        throw err;
      } finally {
        reconciles++;
      }
    };
    ripple = await startRipple(sb, [def, emitEvents()], { env: { MODELSERVING_UNSCHEDULED_AFTER_SECONDS: String(UNSCHEDULED_AFTER_SECONDS) } });
  });
  afterAll(async () => {
    proxy?.resume();
    await ripple?.stop();
    await stopChildrenCaches();
    await proxy?.stop();
    await sb?.cleanup();
  });

  it('after its own status write that the held cache has not seen, a reconcile reads the ModelServing live and writes nothing stale', async () => {
    const statusPath = `${objectPath(Resources.modelServing, sb.namespace, NAME)}/status`;
    const patches = countApiRequests('PATCH', (path) => path === statusPath);
    try {
      // One pod for a scheduler that does not run: it stays Pending, unseen, and no pod event comes after its creation.
      const manifest = msManifest(NAME, sb.namespace, { replicas: 1 });
      const spec = manifest.spec as { template: { roles: Array<{ entryTemplate: { spec: Record<string, unknown> } }> } };
      for (const role of spec.template.roles) role.entryTemplate.spec.schedulerName = 'no-such-scheduler';
      await createMs(sb, manifest);
      const createdAt = Date.now();

      // Settled: the first status is written and the cache holds exactly that version.
      const settled = await waitFor('the first status written and held by the cache', 60_000, async () => {
        const ms = await mustGetMs(sb, NAME);
        const pods = await listPods(sb, NAME);
        if (ms.status?.observedGeneration !== ms.metadata.generation || pods.length !== 1) return undefined;
        return heldVersion(cache) === ms.metadata.resourceVersion ? ms : undefined;
      }).catch(async (err: unknown) => {
        const ms = await mustGetMs(sb, NAME).catch(() => undefined);
        throw new Error(`${String(err)} (ModelServing at ${ms?.metadata.resourceVersion}, status ${JSON.stringify(ms?.status)}; cache holds ${heldVersion(cache)})`);
      });
      // The hold must start before the requeue that reports the unscheduled pod.
      expect(Date.now() - createdAt).toBeLessThan(UNSCHEDULED_AFTER_SECONDS * 1000);
      expect(unscheduledReported(settled)).toBe(false);
      const held = settled.metadata.resourceVersion;
      proxy.blackhole();

      // The requeue at createdAt + 30 s reports the pod on status: the function's own write, which the held cache misses.
      const reported = await waitFor('the unscheduled pod reported on status', 90_000, async () => {
        const ms = await mustGetMs(sb, NAME);
        return unscheduledReported(ms) ? ms : undefined;
      }).catch(async (err: unknown) => {
        const ms = await mustGetMs(sb, NAME).catch(() => undefined);
        throw new Error(`${String(err)} (status ${JSON.stringify(ms?.status)}; reconciles ${reconciles}, failures ${JSON.stringify(failures)})`);
      });
      expect(heldVersion(cache)).toBe(held);
      const before = patches.answered();
      expect(before[200] ?? 0).toBeGreaterThanOrEqual(2);

      // Reconciles after that write (as a resync or any child event would bring): each must read past the held cache.
      const ran = reconciles;
      for (let i = 0; i < 2; i++) {
        const target = reconciles + 1;
        await ripple.host.enqueue(RECONCILE_MODELSERVING, `${sb.namespace}/${NAME}`, 'manual');
        await waitFor(`manual reconcile ${i + 1} to finish`, 60_000, async () => reconciles >= target).catch((err: unknown) => {
          throw new Error(`${String(err)} (reconciles ${reconciles}, failures ${JSON.stringify(failures)})`);
        });
      }
      expect(reconciles).toBeGreaterThanOrEqual(ran + 2);
      // Still held: the reconciles above ran while the cache had not seen the function's own write.
      expect(heldVersion(cache)).toBe(held);
      // Nothing was planned from the held object: no status write refused for its stale resourceVersion, no failed
      // reconcile, and the status stays what the function last wrote.
      expect(patches.answered()[409] ?? 0).toBe(0);
      expect(failures).toEqual([]);
      const now = await mustGetMs(sb, NAME);
      expect(now.metadata.resourceVersion).toBe(reported.metadata.resourceVersion);
    } finally {
      patches.stop();
    }
  });
});
