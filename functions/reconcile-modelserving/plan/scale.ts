/**
 * Scaling ServingGroups and role instances: which ordinals to create, and which to remove first.
 * The same rules serve groups (`<ms>-<ordinal>`) and role instances (`<role>-<index>`).
 */

/**
 * Up to `limit` ordinals of [0, expected) that are not taken, ascending. Work is bounded by the taken
 * set and the limit, not by `expected` (which a user may set to 2^31-1). Out-of-range, duplicate and
 * unsorted taken ordinals are fine.
 */
export function missingOrdinals(expected: number, taken: Iterable<number>, limit = Number.POSITIVE_INFINITY): number[] {
  const out: number[] = [];
  if (expected <= 0 || limit <= 0) return out;
  const set = new Set<number>();
  for (const o of taken) if (o >= 0 && o < expected) set.add(o);
  for (let o = 0; o < expected && out.length < limit; o++) if (!set.has(o)) out.push(o);
  return out;
}

/**
 * Ordinals to create so that `existing` (every object that still holds an ordinal, including ones
 * being deleted) reaches `expected`: the lowest free ordinals, never more than the shortfall, and
 * never more than `limit`.
 */
export function ordinalsToCreate(expected: number, existing: readonly number[], limit = Number.POSITIVE_INFINITY): number[] {
  return missingOrdinals(expected, existing, Math.min(limit, expected - existing.length));
}

export interface ScaleDecision {
  /** How many to remove (chosen with `selectForScaleDown`). */
  remove: number;
  /** Ordinals to create, ascending. */
  create: number[];
}

/**
 * What brings a set of ordinals to `expected`. `held` are the ordinals taken (objects being deleted
 * included: they keep their ordinal until they are gone); `counted` is how many of them count
 * towards `expected`. Ordinals below `partition` (and below `expected`) are protected slots: one
 * that is missing — lost in the middle of a scale-down, say — is recreated even when enough others
 * exist, and an unprotected one is removed in its place, so the protected slots are never left
 * empty while ordinals beyond them stay.
 */
export function scaleDecision(
  expected: number,
  held: readonly number[],
  counted: number,
  partition: number,
  limit = Number.POSITIVE_INFINITY,
): ScaleDecision {
  const protectedMissing = missingOrdinals(Math.min(partition, expected), held);
  const remove = counted + protectedMissing.length - expected;
  if (remove > 0) return { remove, create: protectedMissing.slice(0, limit) };
  return { remove: 0, create: ordinalsToCreate(expected, held, limit) };
}

export interface ScaleDownCandidate {
  ordinal: number;
  /** Running and ready (a ServingGroup: every role instance Running). */
  ready: boolean;
  /** Sum of `controller.kubernetes.io/pod-deletion-cost` over its pods (0 when unset). */
  deletionCost: number;
}

/** Removal order: not ready first, then lower deletion cost, then higher ordinal. */
export function scaleDownOrder(a: ScaleDownCandidate, b: ScaleDownCandidate): number {
  if (a.ready !== b.ready) return a.ready ? 1 : -1;
  if (a.deletionCost !== b.deletionCost) return a.deletionCost - b.deletionCost;
  return b.ordinal - a.ordinal;
}

/**
 * The `count` candidates to remove. Ordinals below `partition` are protected: they go only when
 * removing every other candidate is not enough, and then in the same order among themselves.
 */
export function selectForScaleDown<T extends ScaleDownCandidate>(candidates: readonly T[], count: number, partition = 0): T[] {
  if (count <= 0) return [];
  const unprotected = candidates.filter((c) => c.ordinal >= partition).sort(scaleDownOrder);
  const protectedOnes = candidates.filter((c) => c.ordinal < partition).sort(scaleDownOrder);
  return [...unprotected, ...protectedOnes].slice(0, count);
}
