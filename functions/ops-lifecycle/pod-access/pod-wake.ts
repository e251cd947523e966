/**
 * Wakes a waiting owner when one Pod changes, instead of the owner polling it (issue 15 scenario 7): it calls
 * `wake` once, on the first version newer than the one the owner last read, and then stops. One wait per Pod
 * instance in this process, however often the owner asks while it waits; a newer ask replaces the callback.
 * Callers that await a promise instead (podChanged) each get theirs resolved by the same wait, and may give up
 * on abort.
 *
 * Where the change is seen, cheapest first:
 * 1. the namespace's cache of controlled Pods (pod-cache.ts: one list-watch per namespace, started here if this
 *    process runs none), when it covers the Pod: the Pod is controlled and the cache holds it with its stream up,
 *    or has not listed yet (its first list then says whether the Pod is there). A thousand Pods draining in one namespace cost one
 *    watch, not a thousand;
 * 2. otherwise a list-watch of exactly that Pod (fieldSelector metadata.name): an uncontrolled Pod (enrolled by
 *    the same write that began its deletion), or one the cache does not hold yet (it lags). At most
 *    WAKE_WATCH_LIMIT of these run in a process; past it a wait gets no watch and ends at its fallback (the
 *    owner's 60 s requeue), logged once each time the limit is reached.
 *
 * Process-local and best-effort like a connection pool: a wait lost with its process costs only the owner's
 * slow fallback requeue, never a wrong step, since the owner reads the Pod again before it acts.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { isNewer } from '../../../kube/resource-version.js';
import { Resources } from '../../../kube/resources.js';
import type { Logger } from '../../../base/log.js';
import { outsideReconcileScope } from '../../../base/reconcile-scope.js';
import type { WatchEvent } from '../../../watcher/events.js';
import { ListWatch } from '../../../watcher/list-watch.js';
import { storeKey } from '../../../watcher/store.js';
import { isControlled } from '../protocol/index.js';
import { controlledPodCacheFor } from './pod-cache.js';
import type { LifecyclePod } from './pod.js';

/** A wait nobody re-armed for this long stops even without a change (the owner's fallback takes over). */
export const WAKE_WATCH_MAX_MS = 10 * 60_000;

/**
 * At most this many per-Pod watches (source 2 above) at once in a process; waits past it end at their fallback.
 * Waits the namespace caches serve do not count. Each is one long-running request on the API server.
 */
export const WAKE_WATCH_LIMIT = 100;

let watchLimit = WAKE_WATCH_LIMIT;
/** Whether reaching the limit was logged since the per-Pod watches were last below it. */
let limitLogged = false;

/** Sets the per-Pod watch limit (tests lower it to show the cap; default WAKE_WATCH_LIMIT). */
export function setWakeWatchLimit(limit: number = WAKE_WATCH_LIMIT): void {
  watchLimit = limit;
}

interface Armed {
  /** Where the change is seen: the namespace's pod cache, or a watch of this Pod alone. */
  source: 'cache' | 'watch';
  /** Stops seeing changes: closes the Pod's watch, or leaves the cache. */
  close: () => Promise<void> | void;
  version: string;
  /** The owner's callback (wakeOnPodChange): one, the latest ask's. */
  wake?: () => Promise<void>;
  /** Promises handed out by podChanged, each resolved once. */
  waiters: Set<() => void>;
  expiry: NodeJS.Timeout;
  /** How many times it was asked for (arm): a later ask keeps it past an earlier waiter's linger. */
  asks: number;
}

const armed = new Map<string, Armed>();

function disarm(key: string, entry: Armed): void {
  if (armed.get(key) !== entry) return;
  armed.delete(key);
  clearTimeout(entry.expiry);
  void entry.close();
}

/**
 * Calls `wake` once when `pod` changes past the version given (or is deleted). `pod` is the version the caller
 * planned from; asking again for the same Pod only moves the version and the callback. Past WAKE_WATCH_LIMIT
 * nothing calls it: the owner's fallback requeue (WAKE_FALLBACK_POLL_MS) does the waking.
 */
export function wakeOnPodChange(kc: KubeConfig, pod: LifecyclePod, log: Logger, wake: () => Promise<void>): void {
  const entry = arm(kc, pod, log);
  if (entry) entry.wake = wake;
}

/**
 * Resolves when `pod` changes past the version given (or is deleted), or after `fallbackMs` at the latest (the
 * watch could be lost, or the change come from somewhere the watch does not see): the caller reads the Pod again
 * then either way; past WAKE_WATCH_LIMIT only the fallback ends it. Rejects only when `signal` aborts (with its
 * reason, at once); the wait then stops (closing its watch, or leaving the cache) if nobody else waits on it.
 */
export function podChanged(kc: KubeConfig, pod: LifecyclePod, log: Logger, fallbackMs: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    // Undefined past WAKE_WATCH_LIMIT: then only the fallback (or the abort) ends this wait.
    const entry = arm(kc, pod, log);
    const settle = (): void => {
      clearTimeout(timer);
      entry?.waiters.delete(done);
      signal?.removeEventListener('abort', aborted);
    };
    const done = (): void => {
      settle();
      resolve();
    };
    const aborted = (): void => {
      settle();
      // A watch nobody waits on any more would only hold a connection until WAKE_WATCH_MAX_MS.
      if (entry && unwanted(entry)) disarm(keyOf(pod), entry);
      reject(abortReason(signal));
    };
    const timedOut = (): void => {
      done();
      if (entry) lingerThenDisarm(keyOf(pod), entry, fallbackMs);
    };
    const timer = setTimeout(timedOut, fallbackMs);
    timer.unref();
    entry?.waiters.add(done);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

/** Nobody waits on the wait any more: no promise from podChanged and no owner's callback. */
function unwanted(entry: Armed): boolean {
  return entry.waiters.size === 0 && entry.wake === undefined;
}

/**
 * After a waiter's fallback ended its wait: a caller that still waits reads the Pod and asks again within moments,
 * re-using the watch. If nobody asks again within one more fallback period and nobody else waits, the wait stops
 * (closing its watch, or leaving the cache) instead of holding a connection until WAKE_WATCH_MAX_MS.
 */
function lingerThenDisarm(key: string, entry: Armed, fallbackMs: number): void {
  const asks = entry.asks;
  setTimeout(() => {
    if (entry.asks === asks && unwanted(entry)) disarm(key, entry);
  }, Math.min(fallbackMs, WAKE_WATCH_MAX_MS)).unref();
}

function abortReason(signal: AbortSignal | undefined): unknown {
  return signal?.reason ?? new Error('aborted');
}

function keyOf(pod: LifecyclePod): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name}/${pod.metadata.uid ?? ''}`;
}

/** The wait on `pod`, made if none runs, with its version moved to `pod`'s if that is newer; undefined past the limit. */
function arm(kc: KubeConfig, pod: LifecyclePod, log: Logger): Armed | undefined {
  const version = pod.metadata.resourceVersion;
  if (version === undefined) return undefined;
  const key = keyOf(pod);
  const existing = armed.get(key);
  if (existing) {
    if (isNewer(version, existing.version)) existing.version = version;
    existing.asks++;
    existing.expiry.refresh();
    return existing;
  }
  // The wait, its timers and the owner's callbacks outlive the reconcile that asked (base/reconcile-scope.ts):
  // made inside its scope, a lease lost during the first LIST would abort it and make every later relist throw
  // LeaseLostError for good, and each re-ask would keep that broken watch alive.
  return outsideReconcileScope(() => fromCache(kc, pod, log, key, version) ?? startWatch(kc, pod, log, key, version));
}

/** Whether an event of the Pod is a change past `version` (or its end): delete, another uid, or a newer version. */
function isChange(e: WatchEvent, pod: LifecyclePod, version: string): boolean {
  const v = e.object.metadata.resourceVersion;
  return e.type === 'delete' || e.object.metadata.uid !== pod.metadata.uid || (v !== undefined && isNewer(v, version));
}

/** Fires the wait registered under `key` once (a delete and the check after the first list may both find the Pod gone). */
function fireOnce(key: string, slot: { entry?: Armed }, log: Logger): void {
  const current = slot.entry;
  if (current === undefined || armed.get(key) !== current) return;
  disarm(key, current);
  for (const resolve of [...current.waiters]) resolve();
  const wake = current.wake;
  // Never inside this call: a wake that throws at once must not reach the cache or watch delivering the event.
  if (wake) void Promise.resolve().then(wake).catch((err: unknown) => log.info({ err: String(err), pod: key }, 'waking the owner after a pod change failed'));
}

/** The expiry of a wait nobody re-armed: whoever still awaits reads the Pod again then. */
function expiryOf(key: string, slot: { entry?: Armed }): NodeJS.Timeout {
  const expiry = setTimeout(() => {
    const current = slot.entry;
    if (current === undefined || armed.get(key) !== current) return;
    disarm(key, current);
    for (const resolve of [...current.waiters]) resolve();
  }, WAKE_WATCH_MAX_MS);
  expiry.unref();
  return expiry;
}

/**
 * The wait on `pod` served by its namespace's cache of controlled Pods, if that cache covers it: the Pod is
 * controlled (in the cache's selector) and the cache holds it, or has not listed yet. Undefined otherwise (the
 * caller watches the Pod alone). Called outside any reconcile's scope.
 */
function fromCache(kc: KubeConfig, pod: LifecyclePod, log: Logger, key: string, version: string): Armed | undefined {
  if (!isControlled(pod.metadata.labels ?? {})) return undefined;
  const namespace = pod.metadata.namespace ?? '';
  const cache = controlledPodCacheFor(kc, namespace);
  if (cache.isStopped()) return undefined;
  const view = cache.view();
  const health = view.health();
  const listed = health.synced;
  const held = listed ? view.store.get(storeKey(pod)) : undefined;
  // Listed without the Pod: the cache lags (or the Pod is gone); the Pod's own watch says which at its first list.
  // Listed but its stream down: it would see nothing until it reconnects.
  if (listed && (held === undefined || !health.up)) return undefined;
  const slot: { entry?: Armed } = {};
  const fire = (): void => fireOnce(key, slot, log);
  const leave = cache.follow(namespace, pod.metadata.name, (e) => {
    const current = slot.entry;
    // The cache stopped: nothing will be seen any more, so whoever waits reads the Pod again now.
    if (e === undefined || (current !== undefined && isChange(e, pod, current.version))) fire();
  });
  slot.entry = { source: 'cache', close: leave, version, waiters: new Set(), expiry: expiryOf(key, slot), asks: 1 };
  armed.set(key, slot.entry);
  const heldVersion = held?.metadata.resourceVersion;
  if (held !== undefined && (held.metadata.uid !== pod.metadata.uid || (heldVersion !== undefined && isNewer(heldVersion, version)))) {
    // Already past the version asked about: fire once the caller has registered its waiter or callback.
    setImmediate(fire);
  } else if (!listed) {
    void firstListShowsChange(view, pod, () => armedVersion(key, slot)).then((changed) => {
      if (changed) fire();
    });
  }
  return slot.entry;
}

/** The version the wait in `slot` is armed at, while it is the one armed for `key`. */
function armedVersion(key: string, slot: { entry?: Armed }): string | undefined {
  return slot.entry !== undefined && armed.get(key) === slot.entry ? slot.entry.version : undefined;
}

/** Makes and registers the watch of `pod` alone (called outside any reconcile's scope); undefined past WAKE_WATCH_LIMIT. */
function startWatch(kc: KubeConfig, pod: LifecyclePod, log: Logger, key: string, version: string): Armed | undefined {
  const watching = podWakeWatches();
  if (watching >= watchLimit) {
    if (!limitLogged) {
      limitLogged = true;
      log.warn({ limit: watchLimit, pod: key }, 'per-pod wake watches at their limit: further waits end at their fallback requeue');
    }
    return undefined;
  }
  // Below the limit by more than this one watch: the next time it is reached is logged again.
  if (watching < watchLimit - 1) limitLogged = false;
  const namespace = pod.metadata.namespace ?? '';
  // Set right after the watch is made; its events are delivered asynchronously, never before.
  const slot: { entry?: Armed } = {};
  const fire = (): void => fireOnce(key, slot, log);
  const watch = new ListWatch({
    kc,
    resource: Resources.pod,
    namespace,
    fieldSelector: `metadata.name=${pod.metadata.name}`,
    log,
    onEvent: async (e) => {
      const current = slot.entry;
      // The first list hands over the Pod as it is: only a version past the one planned from is a change.
      if (current !== undefined && isChange(e, pod, current.version)) fire();
    },
  });
  slot.entry = { source: 'watch', close: () => watch.stop(), version, waiters: new Set(), expiry: expiryOf(key, slot), asks: 1 };
  armed.set(key, slot.entry);
  void firstListShowsChange(watch, pod, () => armedVersion(key, slot)).then((changed) => {
    if (changed) fire();
  });
  return slot.entry;
}

/** How often the check after the first list looks whether the watch has synced. */
const SYNC_POLL_MS = 100;

/**
 * Whether the watch's first list already shows a change of `pod`: no Pod of its uid (a Pod deleted before that
 * list brings no delete event, since the store never held it), or the Pod past the version waited on (a cache
 * still listing when the wait began may have stored the newer Pod before the wait followed it). Without this
 * the waiter would sleep until the fallback and the watch stay open until WAKE_WATCH_MAX_MS. `waitedOn` is the
 * version the wait is armed at, undefined once it is disarmed (then false, without waiting any longer).
 */
export async function firstListShowsChange(watch: Pick<ListWatch, 'health' | 'store'>, pod: LifecyclePod, waitedOn: () => string | undefined): Promise<boolean> {
  while (!watch.health().synced) {
    if (waitedOn() === undefined) return false;
    await new Promise((r) => setTimeout(r, SYNC_POLL_MS).unref());
  }
  const version = waitedOn();
  if (version === undefined) return false;
  const held = watch.store.get(storeKey(pod));
  if (held === undefined || held.metadata.uid !== pod.metadata.uid) return true;
  const heldVersion = held.metadata.resourceVersion;
  return heldVersion !== undefined && isNewer(heldVersion, version);
}

/** How many Pods are waited on for an owner now, by either source (tests check none is left behind). */
export function armedPodWakes(): number {
  return armed.size;
}

/** How many of those waits hold a watch of their Pod alone (the ones WAKE_WATCH_LIMIT caps). */
export function podWakeWatches(): number {
  let n = 0;
  for (const e of armed.values()) if (e.source === 'watch') n++;
  return n;
}

/** Stops every pod watch of this process (a test or benchmark that ends on its own). */
export async function stopPodWakes(): Promise<void> {
  const all = [...armed.entries()];
  armed.clear();
  await Promise.all(
    all.map(async ([, e]) => {
      clearTimeout(e.expiry);
      for (const resolve of [...e.waiters]) resolve();
      await e.close();
    }),
  );
}
