/**
 * Rolling updates without surge: an outdated ServingGroup (or role instance) is deleted, and the next
 * scale-up recreates the same name on the update revision. What may be deleted now is bounded so that
 * at least `replicas - maxUnavailable` stay available.
 *
 * The budget is Deployment's (`all - minAvailable - unavailable that will not be deleted`), as Kthena
 * uses it, with one correction: unavailable objects that are *not* candidates — partition-protected
 * ones, not only updated ones — are subtracted too, or a broken protected group would let the
 * rollout take one more available group than allowed.
 */

export interface RollingCandidate {
  ordinal: number;
  /** Counts toward availability. */
  available: boolean;
  /** Already being deleted: it still counts, and re-selecting it costs nothing new. */
  deleting: boolean;
  /** On an old revision (or template hash) and allowed to be replaced (not partition-protected). */
  replaceable: boolean;
}

/**
 * The objects to delete now. `all` is every object that holds an ordinal (including deleting ones
 * and ones just planned for creation); `minAvailable` is `replicas - maxUnavailable`, floored at 0.
 * Order: unavailable replaceable objects first, then available ones, highest ordinal first in each.
 * Objects already deleting may be selected (they use up budget) but are not returned.
 */
export function selectForReplacement<T extends RollingCandidate>(all: readonly T[], minAvailable: number): T[] {
  const candidates = all.filter((o) => o.replaceable);
  const blocked = all.filter((o) => !o.replaceable && !o.available).length;
  const budget = all.length - Math.max(0, minAvailable) - blocked;
  if (budget <= 0) return [];
  const order = (a: T, b: T) => (a.available === b.available ? b.ordinal - a.ordinal : a.available ? 1 : -1);
  return candidates
    .sort(order)
    .slice(0, budget)
    .filter((o) => !o.deleting);
}

/**
 * RoleRollingUpdate's per-role budget inside one ServingGroup. With `maxUnavailable` unset every
 * replaceable instance goes at once (Kthena's behaviour); otherwise `min available = replicas -
 * maxUnavailable`. Deleting instances are never candidates but count as unavailable.
 */
export function selectRoleInstancesForReplacement<T extends RollingCandidate>(
  instances: readonly T[],
  replicas: number,
  maxUnavailable: number | undefined,
): T[] {
  const live = instances.map((i) => (i.deleting ? { ...i, replaceable: false, available: false } : i));
  if (maxUnavailable === undefined) return instances.filter((i) => i.replaceable && !i.deleting);
  const picked = selectForReplacement(live, replicas - maxUnavailable);
  return picked.map((p) => instances.find((i) => i.ordinal === p.ordinal) as T);
}
