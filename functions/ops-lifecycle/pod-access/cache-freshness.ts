/**
 * When may a reconcile plan from the worker's watched Pod cache (pod-cache.ts) instead of a live GET? Pure, so the
 * rule is tested on its own (cache-freshness.test.ts). The cache is another watch stream than the watcher's that
 * woke the reconcile, so it can lag: a reconcile must never plan from a Pod older than
 *
 * 1. **this process's own last write of it** (the version its patch was answered with): every reconcile, the
 *    resync's too, needs the cache to hold that version or a newer one;
 * 2. **the Pod event that woke it**. The queue's job carries only the key and a reason (`Pod:update`, …), not the
 *    event's resourceVersion, so the floor is what this process knows: the event is a change *after* the version
 *    it last planned from or wrote (`handled`). The cache must therefore hold a version newer than `handled`, or
 *    exactly the version of its own last write while that write's event is still to come (`echoPending`: the
 *    event of its own write woke it). Anything else, or a Pod this process has no record of, is read live.
 *
 * Every reconcile, whatever woke it, also needs the cache to hold at least the version this process last planned
 * from (`handled`, which covers its own writes): a Service or EndpointSlice changes *because* a Pod did, so a slice
 * event that comes after a live read of the Pod's newer version must not plan from the version before it (a review
 * found exactly that: gate written at v20, Ready False at v21 read live, then the slice's event planned from v20 and
 * granted nothing until the cache caught up). Resync and Service/EndpointSlice reconciles need no more than that.
 * What this process cannot see — a newer Pod event handled by another worker, or folded into a job woken for
 * another reason — is covered by the cache bringing the Pod back when it sees a newer version than the one read
 * (pod-cache.ts), which waits for the cache's own stream; and no write can land on a stale plan: each is
 * preconditioned on the version planned from (a 409 re-reads live). Versions that cannot be ordered (not etcd
 * revisions) are trusted only when equal.
 */
import { isAtLeast, isKnownNewer, isNewer, isOrdered } from '../../../kube/resource-version.js';

/** What woke a reconcile, as far as the Pod cache is concerned. */
export type WokenBy = 'resync' | 'pod' | 'other';

/** The reason the resync tick enqueues with (runtime/host.ts). */
export const RESYNC_REASON = 'resync';

/**
 * The watcher enqueues with `<Kind>:<event type>` (watcher/watcher.ts). Service and EndpointSlice events do not
 * change the Pod; everything else — a Pod event, a retry after a failure (a 409 means a newer Pod), a dirty rerun
 * (an event came in while running), an enqueue by the cache itself — may stand for a newer Pod.
 */
export function wokenBy(reason: string): WokenBy {
  if (reason === RESYNC_REASON) return 'resync';
  if (reason.startsWith('Service:') || reason.startsWith('EndpointSlice:')) return 'other';
  return 'pod';
}

/** What this process knows of one Pod instance from its own reconciles. */
export interface HandledPod {
  uid: string | undefined;
  /** The newest version a reconcile here planned from or wrote. */
  handled: string;
  /** The version of this process's last write, if it wrote. */
  wrote?: string;
  /** That write's own watch event has not been planned from yet. */
  echoPending: boolean;
}

export function cacheIsFreshEnough(cached: { version: string; uid: string | undefined }, woken: WokenBy, seen: HandledPod | undefined): boolean {
  const known = seen !== undefined && seen.uid === cached.uid ? seen : undefined;
  // Rule 1, and what we already planned from: never older than either (`handled` is at least our last write).
  if (known !== undefined && !isAtLeast(cached.version, known.handled)) return false;
  if (woken !== 'pod') return true;
  // Rule 2: the change that woke us must be one the cache has seen.
  if (known === undefined) return false;
  if (isKnownNewer(cached.version, known.handled)) return true;
  return known.echoPending && cached.version === known.wrote;
}

/** The record after a reconcile planned from `plannedFrom` and ended on `after` (the version of its last write, or the same). */
export function afterReconcile(previous: HandledPod | undefined, plannedFrom: { version: string; uid: string | undefined }, after?: string): HandledPod {
  const same = previous !== undefined && previous.uid === plannedFrom.uid ? previous : undefined;
  const wroteNow = after !== undefined && isNewer(after, plannedFrom.version) ? after : undefined;
  const current = wroteNow ?? plannedFrom.version;
  // An older record never moves `handled` back; versions that cannot be ordered keep the current one.
  const handled = same !== undefined && isOrdered(same.handled) && isOrdered(current) && isNewer(same.handled, current) ? same.handled : current;
  if (wroteNow !== undefined) return { uid: plannedFrom.uid, handled, wrote: wroteNow, echoPending: true };
  // Planning from (or past) our own write's version consumes its event.
  const echoPending = same?.echoPending === true && same.wrote !== undefined && isNewer(same.wrote, plannedFrom.version);
  return { uid: plannedFrom.uid, handled, ...(same?.wrote !== undefined ? { wrote: same.wrote } : {}), echoPending };
}
