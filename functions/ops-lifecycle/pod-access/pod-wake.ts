/**
 * Wakes a waiting owner when one Pod changes, instead of the owner polling it (issue 15 scenario 7): a
 * list-watch of exactly that Pod (fieldSelector metadata.name, watcher/list-watch.ts) that calls `wake` once,
 * on the first version newer than the one the owner last read, and then stops. One watch per Pod instance in
 * this process, however often the owner asks while it waits; a newer ask replaces the callback. Callers that
 * await a promise instead (podChanged) each get theirs resolved by the same watch, and may give up on abort.
 *
 * Process-local and best-effort like a connection pool: a watch lost with its process costs only the owner's
 * slow fallback requeue, never a wrong step, since the owner reads the Pod again before it acts.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { isNewer } from '../../../kube/resource-version.js';
import { Resources } from '../../../kube/resources.js';
import type { Logger } from '../../../runtime/log.js';
import { outsideReconcileScope } from '../../../runtime/reconcile-scope.js';
import { ListWatch } from '../../../watcher/list-watch.js';
import { storeKey } from '../../../watcher/store.js';
import type { LifecyclePod } from './pod.js';

/** A watch nobody re-armed for this long stops even without a change (the owner's fallback takes over). */
export const WAKE_WATCH_MAX_MS = 10 * 60_000;

interface Armed {
  watch: ListWatch;
  version: string;
  /** The owner's callback (wakeOnPodChange): one, the latest ask's. */
  wake?: () => Promise<void>;
  /** Promises handed out by podChanged, each resolved once. */
  waiters: Set<() => void>;
  expiry: NodeJS.Timeout;
}

const armed = new Map<string, Armed>();

function disarm(key: string, entry: Armed): void {
  if (armed.get(key) !== entry) return;
  armed.delete(key);
  clearTimeout(entry.expiry);
  void entry.watch.stop();
}

/**
 * Calls `wake` once when `pod` changes past the version given (or is deleted). `pod` is the version the caller
 * planned from; asking again for the same Pod only moves the version and the callback.
 */
export function wakeOnPodChange(kc: KubeConfig, pod: LifecyclePod, log: Logger, wake: () => Promise<void>): void {
  const entry = arm(kc, pod, log);
  if (entry) entry.wake = wake;
}

/**
 * Resolves when `pod` changes past the version given (or is deleted), or after `fallbackMs` at the latest (the
 * watch could be lost, or the change come from somewhere the watch does not see): the caller reads the Pod again
 * then either way. Rejects only when `signal` aborts (with its reason, at once); the watch then stops if nobody
 * else waits on it.
 */
export function podChanged(kc: KubeConfig, pod: LifecyclePod, log: Logger, fallbackMs: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const entry = arm(kc, pod, log);
    if (!entry) return resolve();
    const settle = (): void => {
      clearTimeout(timer);
      entry.waiters.delete(done);
      signal?.removeEventListener('abort', aborted);
    };
    const done = (): void => {
      settle();
      resolve();
    };
    const aborted = (): void => {
      settle();
      // A watch nobody waits on any more would only hold a connection until WAKE_WATCH_MAX_MS.
      const key = keyOf(pod);
      if (entry.waiters.size === 0 && entry.wake === undefined) disarm(key, entry);
      reject(abortReason(signal));
    };
    const timer = setTimeout(done, fallbackMs);
    timer.unref();
    entry.waiters.add(done);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

function abortReason(signal: AbortSignal | undefined): unknown {
  return signal?.reason ?? new Error('aborted');
}

function keyOf(pod: LifecyclePod): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name}/${pod.metadata.uid ?? ''}`;
}

/** The watch of `pod`, made if none runs, with its version moved to `pod`'s if that is newer. */
function arm(kc: KubeConfig, pod: LifecyclePod, log: Logger): Armed | undefined {
  const version = pod.metadata.resourceVersion;
  if (version === undefined) return undefined;
  const key = keyOf(pod);
  const existing = armed.get(key);
  if (existing) {
    if (isNewer(version, existing.version)) existing.version = version;
    existing.expiry.refresh();
    return existing;
  }
  // The watch, its timers and the owner's callbacks outlive the reconcile that asked (runtime/reconcile-scope.ts):
  // made inside its scope, a lease lost during the first LIST would abort it and make every later relist throw
  // LeaseLostError for good, and each re-ask would keep that broken watch alive.
  return outsideReconcileScope(() => startWatch(kc, pod, log, key, version));
}

/** Makes and registers the watch of `pod` (called outside any reconcile's scope). */
function startWatch(kc: KubeConfig, pod: LifecyclePod, log: Logger, key: string, version: string): Armed {
  const namespace = pod.metadata.namespace ?? '';
  // Set right after the watch is made; its events are delivered asynchronously, never before.
  const slot: { entry?: Armed } = {};
  const fire = (): void => {
    const current = slot.entry;
    // Once: a delete seen by the watch and the check after the first list may both find the Pod gone.
    if (current === undefined || armed.get(key) !== current) return;
    disarm(key, current);
    for (const resolve of [...current.waiters]) resolve();
    current.wake?.().catch((err: unknown) => log.info({ err: String(err), pod: key }, 'waking the owner after a pod change failed'));
  };
  const watch = new ListWatch({
    kc,
    resource: Resources.pod,
    namespace,
    fieldSelector: `metadata.name=${pod.metadata.name}`,
    log,
    onEvent: async (e) => {
      const current = slot.entry;
      if (current === undefined) return;
      const v = e.object.metadata.resourceVersion;
      // The first list hands over the Pod as it is: only a version past the one planned from is a change.
      if (e.type === 'delete' || e.object.metadata.uid !== pod.metadata.uid || (v !== undefined && isNewer(v, current.version))) fire();
    },
  });
  const expiry = setTimeout(() => {
    const current = slot.entry;
    if (current === undefined || armed.get(key) !== current) return;
    disarm(key, current);
    // Nobody asked again for this long: whoever still awaits reads the Pod again now.
    for (const resolve of [...current.waiters]) resolve();
  }, WAKE_WATCH_MAX_MS);
  expiry.unref();
  slot.entry = { watch, version, waiters: new Set(), expiry };
  armed.set(key, slot.entry);
  void firstListLacksPod(watch, pod, () => armed.get(key) === slot.entry).then((gone) => {
    if (gone) fire();
  });
  return slot.entry;
}

/** How often the check after the first list looks whether the watch has synced. */
const SYNC_POLL_MS = 100;

/**
 * Whether the watch's first list found no Pod of `pod`'s uid: a Pod deleted before that list brings no delete
 * event (the store never held it), so without this its waiter would sleep until the fallback and the watch stay
 * open until WAKE_WATCH_MAX_MS. False if the watch is disarmed before it syncs.
 */
export async function firstListLacksPod(watch: Pick<ListWatch, 'health' | 'store'>, pod: LifecyclePod, live: () => boolean): Promise<boolean> {
  while (!watch.health().synced) {
    if (!live()) return false;
    await new Promise((r) => setTimeout(r, SYNC_POLL_MS).unref());
  }
  if (!live()) return false;
  const held = watch.store.get(storeKey(pod));
  return held === undefined || held.metadata.uid !== pod.metadata.uid;
}

/** How many Pods are watched for an owner now (tests check none is left behind). */
export function armedPodWakes(): number {
  return armed.size;
}

/** Stops every pod watch of this process (a test or benchmark that ends on its own). */
export async function stopPodWakes(): Promise<void> {
  const all = [...armed.entries()];
  armed.clear();
  await Promise.all(
    all.map(async ([, e]) => {
      clearTimeout(e.expiry);
      for (const resolve of [...e.waiters]) resolve();
      await e.watch.stop();
    }),
  );
}
