/**
 * A worker-local cache of controlled Pods (CONTROLLED_PODS_SELECTOR), so a reconcile plans from memory instead of
 * one GET per Pod (issue 15 scenario 7). One list-watch per namespace (watcher/list-watch.ts, the same reflector
 * the watcher and the ModelServing children cache run), started on first use and stopped when no reconcile used
 * it for IDLE_MS.
 *
 * Like reconcile-modelserving/children-cache.ts, the cache is an optimisation and never a source of truth:
 * - every write the handler makes is preconditioned on the resourceVersion it planned from (patches.ts), so a
 *   stale read can only cost a 409, after which the handler reads the Pod live and plans again;
 * - a cache that is not listed and streaming, or that does not hold the Pod, answers undefined: read live;
 * - it answers only when it is fresh enough for what woke the reconcile (cache-freshness.ts): never older than
 *   what this process last planned from or wrote of the Pod, and for a reconcile woken by a Pod event, newer than
 *   that (or exactly its own write, whose event woke it). A cache that lags the watcher's stream is therefore read
 *   past, not planned from;
 * - a read can still be followed by a Pod event the keyed queue folded into the same job while the cache was
 *   behind. So an event that passes the function's own trigger predicate, for a Pod read from this cache at an
 *   older version, enqueues that Pod again. Rule 2 of the children cache, without its timer: one extra
 *   reconcile at most, and the keyed queue folds it into the watcher's own when both are pending.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { isNewer } from '../../../kube/resource-version.js';
import { Resources } from '../../../kube/resources.js';
import { createLogger, type Logger } from '../../../base/log.js';
import { NamespacedCaches } from '../../../runtime/namespaced-caches.js';
import type { WatchEvent } from '../../../watcher/events.js';
import { ListWatch } from '../../../watcher/list-watch.js';
import { passes } from '../../../watcher/predicates.js';
import { storeKey } from '../../../watcher/store.js';
import { afterReconcile, cacheIsFreshEnough, type HandledPod, type WokenBy } from './cache-freshness.js';
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
  /** Per Pod key, what this process's reconciles last planned from and wrote (cache-freshness.ts). */
  private readonly handled = new Map<string, HandledPod>();
  /** Keys of `handled` the store lacked at the last idle tick (sweepGone). */
  private goneSuspects = new Set<string>();
  /**
   * Per Pod key, who waits for its next event (pod-wake.ts: an owner waiting on the Pod's next version); each is
   * called with every event of the Pod after the store took it in, and with undefined when the cache stops.
   */
  private readonly followers = new Map<string, Set<(e: WatchEvent | undefined) => void>>();
  /** Reads the cache answered, reads it refused as not fresh enough, and events that brought a Pod back (for tests and the benchmark). */
  hits = 0;
  behind = 0;
  lateEnqueues = 0;

  constructor(
    kc: KubeConfig,
    namespace: string,
    private readonly log: Logger,
    private readonly onStop: () => void,
    watchKc: KubeConfig = kc,
  ) {
    this.watch = new ListWatch({
      kc: watchKc,
      resource: Resources.pod,
      namespace,
      labelSelector: CONTROLLED_PODS_SELECTOR,
      log,
      onEvent: async (e) => this.onEvent(e),
    });
    this.idle = setInterval(() => {
      // Not while an owner waits on one of its Pods: that wait is the cache's use (pod-wake.ts).
      if (Date.now() - this.lastUsed >= IDLE_MS && this.followers.size === 0) return void this.stop();
      if (this.ready()) this.goneSuspects = sweepGone(this.handled, (key) => this.watch.store.get(key) !== undefined, this.goneSuspects);
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
   * held, unreadable, or not fresh enough for a reconcile woken as `woken`): the caller reads it live then.
   * `enqueue` brings the Pod back if a newer event follows.
   */
  read(namespace: string, name: string, woken: WokenBy, enqueue: (key: string) => Promise<void>): LifecyclePod | undefined {
    this.lastUsed = Date.now();
    if (!this.ready()) return undefined;
    const key = `${namespace}/${name}`;
    const held = this.watch.store.get(key);
    const parsed = held === undefined ? undefined : lifecyclePodSchema.safeParse(held);
    const version = parsed?.success ? parsed.data.metadata.resourceVersion : undefined;
    if (!parsed?.success || version === undefined) return undefined;
    if (!cacheIsFreshEnough({ version, uid: parsed.data.metadata.uid }, woken, this.handled.get(key))) {
      this.behind++;
      return undefined;
    }
    this.enqueue = enqueue;
    this.readAt.set(key, version);
    this.hits++;
    return parsed.data;
  }

  /**
   * A reconcile of this process planned from `plannedFrom` (cached or live) and ended on `after` (the Pod as its
   * last write answered, or undefined when it wrote nothing or failed): the floors of the next reads.
   */
  noteReconciled(plannedFrom: LifecyclePod, after?: LifecyclePod): void {
    const version = plannedFrom.metadata.resourceVersion;
    if (version === undefined) return;
    const key = `${plannedFrom.metadata.namespace ?? ''}/${plannedFrom.metadata.name}`;
    this.handled.set(key, afterReconcile(this.handled.get(key), { version, uid: plannedFrom.metadata.uid }, after?.metadata.resourceVersion));
  }

  /** Stopped (idle, or by stopControlledPodCaches): it will not deliver anything again. */
  isStopped(): boolean {
    return this.stopped;
  }

  /** The list-watch's health and store, read-only (pod-wake.ts checks what its first list held). */
  view(): Pick<ListWatch, 'health' | 'store'> {
    return this.watch;
  }

  /**
   * Calls `listener` with each event of the Pod `namespace/name` this cache takes in from now on (after its store
   * did), and with undefined if the cache stops, until the returned function is called. Used by pod-wake.ts to
   * serve many waits on one namespace's Pods from this one watch instead of one watch per Pod.
   */
  follow(namespace: string, name: string, listener: (e: WatchEvent | undefined) => void): () => void {
    this.lastUsed = Date.now();
    const key = `${namespace}/${name}`;
    let set = this.followers.get(key);
    if (!set) this.followers.set(key, (set = new Set()));
    set.add(listener);
    const own = set;
    return () => {
      own.delete(listener);
      if (own.size === 0 && this.followers.get(key) === own) this.followers.delete(key);
      this.lastUsed = Date.now();
    };
  }

  /** How many Pods this cache keeps a `handled` record of (tests and diagnostics). */
  handledCount(): number {
    return this.handled.size;
  }

  /** The version the cache holds of a Pod now, without using it (tests and diagnostics). */
  heldVersion(namespace: string, name: string): string | undefined {
    return this.watch.store.get(`${namespace}/${name}`)?.metadata.resourceVersion;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.idle);
    this.onStop();
    const following = [...this.followers.values()].flatMap((set) => [...set]);
    this.followers.clear();
    for (const listener of following) listener(undefined);
    await this.watch.stop();
  }

  private onEvent(e: WatchEvent): void {
    const key = storeKey(e.object);
    const following = this.followers.get(key);
    // A follower that throws is its own bug: the others, and this cache's bookkeeping below, still see the event.
    if (following) {
      for (const listener of [...following]) {
        try {
          listener(e);
        } catch (err) {
          this.log.error({ err: String(err), pod: key }, 'a follower of this pod threw on its event');
        }
      }
    }
    if (e.type === 'delete') this.handled.delete(key);
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

/**
 * Forgets the `handled` records of Pods the store no longer holds. The delete event drops a Pod's record, but a
 * reconcile still running then (or one that read the Pod live once its control label was removed) records it
 * again afterwards, and nothing else would ever drop it. A key is dropped only when the store lacked it at two
 * ticks in a row, so a Pod this process wrote just before the cache took it in keeps its floor. Returns the keys
 * missing now for the first time (the next tick's suspects).
 */
export function sweepGone(handled: Map<string, unknown>, holds: (key: string) => boolean, suspects: ReadonlySet<string>): Set<string> {
  const next = new Set<string>();
  for (const key of [...handled.keys()]) {
    if (holds(key)) continue;
    if (suspects.has(key)) handled.delete(key);
    else next.add(key);
  }
  return next;
}

const caches = new NamespacedCaches<ControlledPodCache>();

let base: Logger | undefined;

/**
 * The cache of `namespace`'s controlled Pods for this KubeConfig, started on first use. The logger is a base
 * one, not the calling reconcile's (whose key it would carry). `watchKc` is what its watch connects with when it
 * starts here (default `kc`): a test puts a proxy in front of it to make the cache lag on purpose.
 */
export function controlledPodCacheFor(
  kc: KubeConfig,
  namespace: string,
  log: Logger = (base ??= createLogger('ops-lifecycle')),
  watchKc: KubeConfig = kc,
): ControlledPodCache {
  return caches.get(kc, namespace, (onStop) => new ControlledPodCache(kc, namespace, log.child({ cache: 'ops-lifecycle-pods', namespace }), onStop, watchKc));
}

/** Reads answered from the running caches of this process (the benchmark reports it). */
export function controlledPodCacheHits(): number {
  return caches.running().reduce((n, c) => n + c.hits, 0);
}

/** Stops every cache of this process now, for a process that ends on its own (a benchmark, a test). */
export async function stopControlledPodCaches(): Promise<void> {
  await caches.stopAll();
}
