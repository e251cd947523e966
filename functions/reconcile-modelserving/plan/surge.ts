/**
 * maxSurge (Kthena #1626, proposal #1565): during a rolling update, up to `surge` extra ServingGroups
 * (or role instances) on the update revision run above the replicas, so outdated ones can be replaced
 * without dropping below `replicas - maxUnavailable` — with `maxUnavailable: 0`, without losing any.
 *
 * The stable ordinals are `[0, replicas)`; surge ordinals are the next ones, `[replicas, replicas +
 * surge)`. Replaced stable ordinals are refilled under their own names (partition is by ordinal, seed
 * 004), and the surge ordinals go once every stable ordinal outside the partition is updated and
 * available. Protected ordinals (below the partition) are not part of the rollout and never wait for it.
 * The same rule serves role instances inside a group (RoleRollingUpdate, per role).
 */

export interface SurgeSlot {
  ordinal: number;
  deleting: boolean;
  available: boolean;
  /** On the update revision (or the spec's role template). */
  updated: boolean;
}

export interface SurgePlan {
  /** Ordinals at or above `replicas` that are surge slots now: they do not count towards the replicas. */
  keep: Set<number>;
  /** Surge ordinals to create now, ascending. */
  create: number[];
}

const NONE: SurgePlan = { keep: new Set(), create: [] };

export function planSurge(replicas: number, partition: number, surge: number, slots: readonly SurgeSlot[]): SurgePlan {
  if (surge <= 0 || replicas <= 0) return NONE;
  const byOrdinal = new Map(slots.map((s) => [s.ordinal, s]));
  let done = true;
  let outdated = 0;
  for (let o = Math.max(0, partition); o < replicas; o++) {
    const s = byOrdinal.get(o);
    if (!s || s.deleting || !s.updated || !s.available) done = false;
    if (s && !s.updated) outdated++;
  }
  if (done) return NONE;
  const keep = new Set(slots.filter((s) => s.ordinal >= replicas && s.ordinal < replicas + surge && s.updated && !s.deleting).map((s) => s.ordinal));
  // New surge slots only while something outdated is left to replace; the ones that exist stay until
  // the replacements are available (a plain scale-up or recovery never surges).
  const wanted = Math.min(surge, outdated);
  const create: number[] = [];
  for (let o = replicas; o < replicas + wanted; o++) if (!byOrdinal.has(o)) create.push(o);
  return { keep, create };
}
