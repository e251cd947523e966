// The Ripple side of bench/scale.ts's comparison with a client-go informer, run as its own process
// (`node --import tsx --expose-gc bench/scale/watch-rss.ts KUBECONFIG`): the real Watcher with every
// built-in function's triggers on Pods, Deployments and Services — the same watches, label selectors
// and projections the production watcher opens for those kinds — cluster-wide, synced, then its RSS
// from /proc/self/status before and after forced GCs. Prints one JSON line, the Go side's shape.
// Ripple's code is the checkout's (argv[3], bench/baseline.ts), not this tree's edits in progress. Compiled
// (`node --expose-gc DIST/bench/scale/watch-rss.js KUBECONFIG DIST`, DIST being the checkout compiled by
// informer-compare.ts's compileCheckout) it loads the compiled modules instead, as a production image built
// with tsc would run: no tsx loader, no TypeScript compiled at start-up.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as FunctionsModule from '../../functions/index.js';
import type * as ConfigModule from '../../kube/config.js';
import type * as ResourcesModule from '../../kube/resources.js';
import type * as LogModule from '../../base/log.js';
import type * as ListWatchModule from '../../watcher/list-watch.js';
import type * as WatcherModule from '../../watcher/watcher.js';
import { rssMiB } from './procstat.js';

const [kubeconfig, checkout] = process.argv.slice(2);
if (!kubeconfig || !checkout) throw new Error('usage: watch-rss.ts KUBECONFIG CHECKOUT');
const compiled = import.meta.url.endsWith('.js');
const load = <T>(file: string) => import(pathToFileURL(path.join(checkout, compiled ? file.replace(/\.ts$/, '.js') : file)).href) as Promise<T>;
const { allFunctions } = await load<typeof FunctionsModule>('functions/index.ts');
const { loadKubeConfig } = await load<typeof ConfigModule>('kube/config.ts');
const { resourceId, Resources } = await load<typeof ResourcesModule>('kube/resources.ts');
// The logger moved from runtime/ to base/; a baseline checkout from before has it at its old place.
const { createLogger } = await load<typeof LogModule>(existsSync(path.join(checkout, 'base')) ? 'base/log.ts' : 'runtime/log.ts');
const { ListWatch } = await load<typeof ListWatchModule>('watcher/list-watch.ts');
const { Watcher } = await load<typeof WatcherModule>('watcher/watcher.ts');
type ListWatch = InstanceType<typeof ListWatch>;
type ListWatchOptions = ConstructorParameters<typeof ListWatch>[0];

const KINDS = new Set([Resources.pod, Resources.deployment, Resources.service].map(resourceId));
const round1 = (x: number) => Math.round(x * 10) / 10;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const self = () => rssMiB(process.pid) ?? Number.NaN;

const functions = allFunctions()
  .map((def) => ({ ...def, triggers: def.triggers.filter((t) => KINDS.has(resourceId(t.resource))) }))
  .filter((def) => def.triggers.length > 0);
const kc = loadKubeConfig({ kind: 'kubeconfig', path: kubeconfig });
gc();
const rssStartMiB = self();
const sources: ListWatch[] = [];
const watcher = new Watcher({
  kc,
  // The production source, kept at hand to count what the stores hold.
  source: (o: ListWatchOptions) => {
    const lw = new ListWatch(o);
    sources.push(lw);
    return lw;
  },
  functions,
  // Leader, so every event runs through its predicates and mappers as in production; keys go nowhere.
  enqueue: async () => undefined,
  isLeader: () => true,
  log: createLogger('bench-scale-watch-rss', 'warn'),
});
const t0 = Date.now();
watcher.start();
await watcher.waitForSync(600_000);
const syncMs = Date.now() - t0;
// Let the initial list's events drain through the delivery buffer before measuring.
await new Promise((r) => setTimeout(r, 2_000));
const rssSyncMiB = self();
gc();
gc();
const heap = process.memoryUsage().heapUsed;
// Objects held across the stores (a Pod in two watches counts twice, as it is stored twice).
const stored = sources.reduce((n, lw) => n + lw.store.size, 0);
process.stdout.write(
  `${JSON.stringify({ variant: compiled ? 'ripple-compiled' : 'ripple', objects: stored, watches: sources.length, rssStartMiB: round1(rssStartMiB), rssSyncMiB: round1(rssSyncMiB), rssGcMiB: round1(self()), heapMiB: round1(heap / 1024 / 1024), syncMs })}\n`,
);
await watcher.stop();
process.exit(0);

