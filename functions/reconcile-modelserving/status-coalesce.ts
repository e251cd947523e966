/**
 * Coalescing of a converge's progress writes. While the pods of a rollout or scale come up one by one, every
 * pod event brings a reconcile whose status differs from the last only in the counts (a role's readyReplicas,
 * availableReplicas, the progress message and clock): each was a status PATCH, 2–5 per ModelServing in
 * bench/modelserving-converge.ts, most within seconds of each other. Such a write is held back while the last
 * progress write is younger than STATUS_COALESCE_MS, and the reconcile comes back when it is not (the counts
 * are then written as they are by then). Anything else is written at once: a phase or condition change
 * (status or reason, so every transition Event goes with its write), a new generation, revisions, problems.
 */
import { isDeepStrictEqual } from 'node:util';

/**
 * Progress writes of one ModelServing closer together than this are coalesced into one. In the benchmark the
 * pods of a new ModelServing come up within 2–4 s of its first status write, so the counts in between are
 * never written and the next write is the one that says Ready; a long rollout's counts move at most this late.
 */
export const STATUS_COALESCE_MS = 5_000;

type Rec = Record<string, unknown>;
const isRecord = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Status keys whose change alone is a count of a rollout in progress. */
const PROGRESS_KEYS = new Set(['availableReplicas', 'roles', 'conditions', 'lastProgressTime']);
/** Per role, what moves as its pods become ready. */
const ROLE_PROGRESS_KEYS = new Set(['readyReplicas', 'notReady']);
/** What a condition change a user acts on is: its status or reason (its message may carry the counts). */
const CONDITION_IDENTITY = ['type', 'status', 'reason', 'observedGeneration'] as const;

function sameExcept(a: unknown, b: unknown, free: ReadonlySet<string>): boolean {
  if (!isRecord(a) || !isRecord(b)) return false;
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (!free.has(k) && !isDeepStrictEqual(a[k], b[k])) return false;
  }
  return true;
}

function sameList(a: unknown, b: unknown, same: (x: unknown, y: unknown) => boolean): boolean {
  return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
}

const sameCondition = (x: unknown, y: unknown) => isRecord(x) && isRecord(y) && CONDITION_IDENTITY.every((k) => isDeepStrictEqual(x[k], y[k]));
const sameRole = (x: unknown, y: unknown) => sameExcept(x, y, ROLE_PROGRESS_KEYS);

/**
 * How long (ms) to hold back the status write `next` (the patch body's status) over `previous` (the status
 * read), or 0 to send it now.
 */
export function holdBackMs(previous: unknown, next: Rec, nowMs: number): number {
  if (!isRecord(previous)) return 0;
  // Only within a rollout in progress (the clock runs before and after this write), written less than the window ago.
  const last = previous.lastProgressTime;
  if (typeof last !== 'string' || typeof next.lastProgressTime !== 'string') return 0;
  const since = nowMs - Date.parse(last);
  if (!(since >= 0 && since < STATUS_COALESCE_MS)) return 0;
  for (const [k, v] of Object.entries(next)) {
    if (!PROGRESS_KEYS.has(k) && !isDeepStrictEqual(previous[k], v)) return 0;
  }
  if ('conditions' in next && !sameList(previous.conditions, next.conditions, sameCondition)) return 0;
  if ('roles' in next && !sameList(previous.roles, next.roles, sameRole)) return 0;
  return STATUS_COALESCE_MS - since;
}
