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
 * Reconciles woken by a Service or EndpointSlice event (the Pod did not change) and resync reconciles need only
 * rule 1. What rule 2 cannot see — a later Pod event folded into the same job while the cache is at an earlier
 * one — is covered by the cache bringing the Pod back when it sees a newer version than the one read (pod-cache.ts),
 * and no write can land on a stale plan: each is preconditioned on the version planned from (a 409 re-reads live).
 */
import { isNewer, isOrdered } from '../../../kube/resource-version.js';

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
  // Rule 1: never older than our own last write.
  if (known?.wrote !== undefined && isNewer(known.wrote, cached.version)) return false;
  if (woken !== 'pod') return true;
  // Rule 2: the change that woke us must be one the cache has seen.
  if (known === undefined) return false;
  if (isNewer(cached.version, known.handled)) return true;
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
