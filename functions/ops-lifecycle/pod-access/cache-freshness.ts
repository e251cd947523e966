/**
 * When may a reconcile plan from the worker's watched Pod cache (pod-cache.ts) instead of a live GET? Pure, so the
 * rule is tested on its own (cache-freshness.test.ts). The cache is another watch stream than the watcher's that
 * woke the reconcile, so it can lag: a reconcile must never plan from a Pod older than
 *
 * 1. **this process's own last write of it** (the version its patch was answered with): every reconcile, the
 *    resync's too, needs the cache to hold that version or a newer one;
 * 2. **the Pod event that woke it**. The queue hands the reconcile the highest resourceVersion of the Pod events
 *    that enqueued it since its previous run (ReconcileRequest.minResourceVersion, docs/kernel.md "Woken at"),
 *    whichever worker saw or folded them: the cache must hold at least that version (`atLeast`). On top of it, the
 *    floor this process knows: the event is a change *after* the version it last planned from or wrote
 *    (`handled`). The cache must therefore hold a version newer than `handled`, or exactly the version of its own
 *    last write while that write's event is still to come (`echoPending`: the event of its own write woke it).
 *    Anything else, or a Pod this process has no record of, is read live.
 *
 * Every reconcile, whatever woke it, also needs the cache to hold at least the version this process last planned
 * from (`handled`, which covers its own writes): a Service or EndpointSlice changes *because* a Pod did, so a slice
 * event that comes after a live read of the Pod's newer version must not plan from the version before it (a review
 * found exactly that: gate written at v20, Ready False at v21 read live, then the slice's event planned from v20 and
 * granted nothing until the cache caught up). Resync and Service/EndpointSlice reconciles need no more than that.
 * A newer Pod event handled by another worker, or folded into a job woken for another reason (a Service event, a
 * resync), reaches this reconcile as `atLeast` too: the queue keeps the version per key until the claim. What
 * is left — an event the watcher has not enqueued yet — wakes a later run; the cache also brings the Pod back
 * when it sees a newer version than the one read (pod-cache.ts); and no write can land on a stale plan: each is
 * preconditioned on the version planned from (a 409 re-reads live). Versions that cannot be ordered (not etcd
 * revisions) are trusted only when equal.
 */
import { isAtLeast, isKnownNewer, isNewer, isOrdered } from '../../../kube/resource-version.js';

/** What kind of request woke a reconcile, as far as the Pod cache is concerned. */
export type WokenKind = 'resync' | 'pod' | 'other';

/**
 * What woke a reconcile: its kind, and with `atLeast` the resourceVersion of the newest Pod event behind it as the
 * queue handed it over (ReconcileRequest.minResourceVersion). A bare kind when the request carries none.
 */
export type WokenBy = WokenKind | { by: WokenKind; atLeast: string };

/** The reason the resync tick enqueues with (runtime/host.ts). */
export const RESYNC_REASON = 'resync';

/**
 * The watcher enqueues with `<Kind>:<event type>` (watcher/watcher.ts). Service and EndpointSlice events do not
 * change the Pod; everything else — a Pod event, a retry after a failure (a 409 means a newer Pod), a dirty rerun
 * (an event came in while running), an enqueue by the cache itself — may stand for a newer Pod.
 */
export function wokenBy(reason: string, minResourceVersion?: string): WokenBy {
  const by: WokenKind = reason === RESYNC_REASON ? 'resync' : reason.startsWith('Service:') || reason.startsWith('EndpointSlice:') ? 'other' : 'pod';
  return minResourceVersion === undefined || minResourceVersion === '' ? by : { by, atLeast: minResourceVersion };
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

export function cacheIsFreshEnough(cached: { version: string; uid: string | undefined }, wokenAs: WokenBy, seen: HandledPod | undefined): boolean {
  const { by: woken, atLeast } = typeof wokenAs === 'string' ? { by: wokenAs, atLeast: undefined } : wokenAs;
  // The newest Pod event behind this request, whoever saw it: the cache must have seen it too (an opaque version
  // only when equal).
  if (atLeast !== undefined && !isAtLeast(cached.version, atLeast)) return false;
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
