/**
 * Ordering of resourceVersions, for the worker-local caches that must know whether they have seen a write
 * (functions/reconcile-modelserving/children-cache.ts, functions/ops-lifecycle/pod-access/pod-cache.ts and
 * pod-wake.ts). They are etcd revisions, compared as integers the way client-go's watch cache does — an
 * exception to DESIGN's "compared only for equality", written down in docs/modelserving.md. One that is not
 * a number is compared for equality only: a different one is never assumed older, so a cache that cannot
 * tell lists or re-reads instead of trusting itself.
 */
const NUMERIC = /^\d+$/;

/** Whether a resourceVersion can be ordered against others (an etcd revision), not only compared for equality. */
export function isOrdered(rv: string): boolean {
  return NUMERIC.test(rv);
}

/** Whether resourceVersion `a` is newer than `b`. */
export function isNewer(a: string, b: string): boolean {
  if (!isOrdered(a) || !isOrdered(b)) return a !== b;
  return BigInt(a) > BigInt(b);
}

/**
 * Whether `a` is certainly newer than `b`: both are etcd revisions and `a` is the larger. `isNewer` answers
 * "maybe newer" for opaque versions, which is the safe guess when it makes a cache refuse itself; a decision
 * that *trusts* a cache because it is newer needs this one, or a wrong guess plans from old state.
 */
export function isKnownNewer(a: string, b: string): boolean {
  return isOrdered(a) && isOrdered(b) && BigInt(a) > BigInt(b);
}

/** Whether `a` is certainly not older than `b`: the same version, or known newer. */
export function isAtLeast(a: string, b: string): boolean {
  return a === b || isKnownNewer(a, b);
}
