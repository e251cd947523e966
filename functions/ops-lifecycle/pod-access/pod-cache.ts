/**
 * A worker-local cache of controlled Pods (CONTROLLED_PODS_SELECTOR), so a resync reconcile of a Pod that did
 * not change plans from memory instead of one GET per Pod (issue 15 scenario 7). One list-watch per namespace
 * (watcher/list-watch.ts, the same reflector the watcher and the ModelServing children cache run), started on
 * first use and stopped when no reconcile used it for IDLE_MS.
 *
 * Like reconcile-modelserving/children-cache.ts, the cache is an optimisation and never a source of truth:
 * - every write the handler makes is preconditioned on the resourceVersion it planned from (patches.ts), so a
 *   stale read can only cost a 409, after which the handler reads the Pod live and plans again;
 * - a cache that is not listed and streaming, or that does not hold the Pod, answers undefined: read live;
 * - only resync reconciles read it (handler.ts): a reconcile woken by an event reads live, so a cache that lags
 *   the watcher's stream cannot make it plan without the event that woke it;
 * - a resync can still be merged with an event of the same key in the queue (one job, reason 'resync'). So an
 *   event that passes the function's own trigger predicate, for a Pod read from this cache at an older version,
 *   enqueues that Pod again (as 'handler', which reads live). Rule 2 of the children cache, without its timer:
 *   one extra reconcile at most, and the keyed queue folds it into the watcher's own when both are pending.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { isNewer } from '../../../kube/resource-version.js';
import { Resources } from '../../../kube/resources.js';
import { createLogger, type Logger } from '../../../runtime/log.js';
import { NamespacedCaches } from '../../../runtime/namespaced-caches.js';
import type { WatchEvent } from '../../../watcher/events.js';
import { ListWatch } from '../../../watcher/list-watch.js';
import { passes } from '../../../watcher/predicates.js';
import { storeKey } from '../../../watcher/store.js';
import { CONTROLLED_PODS_SELECTOR, lifecycleInputsChanged } from '../triggers.js';
import { lifecyclePodSchema, type LifecyclePod } from './pod.js';

/** A cache no reconcile used for this long stops its watch. */
export const IDLE_MS = 5 * 60_000;

export class ControlledPodCache {
  private readonly watch: ListWatch;
  /** Per Pod key, the version a reconcile last read from the cache (until an event for it is handled). */
  private readonly readAt = new Map<string, string>();
  private enqueue: ((key: string) => Promise<void>) | undefined;
  private lastUsed = Date.now();
  private readonly idle: NodeJS.Timeout;
  private stopped = false;
  /** Reads the cache answered, and events that brought a Pod back (for tests and the benchmark). */
  hits = 0;
  lateEnqueues = 0;

  constructor(
    kc: KubeConfig,
    namespace: string,
    private readonly log: Logger,
    private readonly onStop: () => void,
  ) {
    this.watch = new ListWatch({
      kc,
      resource: Resources.pod,
      namespace,
      labelSelector: CONTROLLED_PODS_SELECTOR,
      log,
      onEvent: async (e) => this.onEvent(e),
    });
    this.idle = setInterval(() => {
      if (Date.now() - this.lastUsed >= IDLE_MS) void this.stop();
    }, IDLE_MS / 5);
    this.idle.unref();
  }

  /** Listed and streaming. */
  ready(): boolean {
    const h = this.watch.health();
    return !this.stopped && h.synced && h.up;
  }

  /**
   * The Pod `namespace/name` as the cache holds it, or undefined when the cache cannot answer (not synced, not
   * held, unreadable): the caller reads it live then. `enqueue` brings the Pod back if a newer event follows.
   */
  read(namespace: string, name: string, enqueue: (key: string) => Promise<void>): LifecyclePod | undefined {
    this.lastUsed = Date.now();
    if (!this.ready()) return undefined;
    const key = `${namespace}/${name}`;
    const held = this.watch.store.get(key);
    const parsed = held === undefined ? undefined : lifecyclePodSchema.safeParse(held);
    if (!parsed?.success || parsed.data.metadata.resourceVersion === undefined) return undefined;
    this.enqueue = enqueue;
    this.readAt.set(key, parsed.data.metadata.resourceVersion);
    this.hits++;
    return parsed.data;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.idle);
    this.onStop();
    await this.watch.stop();
  }

  private onEvent(e: WatchEvent): void {
    const key = storeKey(e.object);
    const read = this.readAt.get(key);
    if (read === undefined) return;
    if (e.type === 'delete') this.readAt.delete(key);
    if (!passes(lifecycleInputsChanged, e)) return;
    const version = e.object.metadata.resourceVersion;
    // Events are handed over after the store took them in, so the read may already have seen this one.
    if (version !== undefined && !isNewer(version, read)) return;
    this.readAt.delete(key);
    if (!this.enqueue) return;
    this.lateEnqueues++;
    // Failing here is the host shutting down or Redis being away: the watcher's own enqueue of the same event,
    // or the next resync, brings the Pod back then.
    this.enqueue(key).catch((err: unknown) => this.log.info({ err: String(err), pod: key }, 'enqueue after a pod event failed'));
  }
}

const caches = new NamespacedCaches<ControlledPodCache>();

let base: Logger | undefined;

/**
 * The cache of `namespace`'s controlled Pods for this KubeConfig, started on first use. The logger is a base
 * one, not the calling reconcile's (whose key it would carry).
 */
export function controlledPodCacheFor(kc: KubeConfig, namespace: string, log: Logger = (base ??= createLogger('ops-lifecycle'))): ControlledPodCache {
  return caches.get(kc, namespace, (onStop) => new ControlledPodCache(kc, namespace, log.child({ cache: 'ops-lifecycle-pods', namespace }), onStop));
}

/** Reads answered from the running caches of this process (the benchmark reports it). */
export function controlledPodCacheHits(): number {
  return caches.running().reduce((n, c) => n + c.hits, 0);
}

/** Stops every cache of this process now, for a process that ends on its own (a benchmark, a test). */
export async function stopControlledPodCaches(): Promise<void> {
  await caches.stopAll();
}
