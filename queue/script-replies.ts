import { z } from 'zod';

/**
 * What the queue's scripts (queue/scripts.ts) answer, checked where the answers come back from Redis.
 *
 * These checks run several times per job, so each is one hand-written guard inside `z.custom`. Checking
 * RELEASE_AND_FINISH's answer and the schedule in it with zod's composed tuples and unions took 15 µs per job over a
 * fresh process's first 750 jobs and 4.7 µs after 10,000; the guards take 7.2 and 2.0 (building the test answers
 * included in both; bench/README.md, "Round 7 of the queue"). A worker that scales from zero, as on Knative, lives
 * mostly in its first thousand jobs. Each guard checks every element its type names; an answer that fails is a
 * ZodError saying what was expected.
 */

const isStringFrom = (v: readonly unknown[], from: number): boolean => {
  for (let i = from; i < v.length; i++) if (typeof v[i] !== 'string') return false;
  return true;
};

const SCHEDULE_ACTIONS = new Set<unknown>(['add', 'added', 'reschedule', 'coalesced', 'deferred', 'none']);
export type ScheduleReplyAction = 'add' | 'added' | 'reschedule' | 'coalesced' | 'deferred' | 'none';
/** schedule()'s four fields (RELEASE appends the failure count and the backoff). */
export type ScheduleReply = [ScheduleReplyAction, string, string, '0' | '1', ...string[]];
export const scheduleReply = z.custom<ScheduleReply>((v) => Array.isArray(v) && v.length >= 4 && SCHEDULE_ACTIONS.has(v[0]) && isStringFrom(v, 1) && (v[3] === '0' || v[3] === '1'), {
  message: "expected schedule()'s answer: [action, job id, delay ms, '0' | '1', …strings]",
});

const CLAIM_VERDICTS = new Set<unknown>(['claimed', 'held', 'reschedule', 'skip']);
export type ClaimVerdictName = 'claimed' | 'held' | 'reschedule' | 'skip';
/** CLAIM's answer: verdict, value, delay ms, woken version. */
export type ClaimReply = [ClaimVerdictName, string, string, string];
const isClaim = (v: unknown, length: number): boolean => Array.isArray(v) && v.length === length && CLAIM_VERDICTS.has(v[0]) && isStringFrom(v, 1);
export const claimReply = z.custom<ClaimReply>((v) => isClaim(v, 4), { message: "expected CLAIM's answer: [verdict, value, delay ms, version]" });

/** claimFetched's answer: CLAIM's for the fetched job and its id, or nothing (no job fetched, or not a reconcile). */
export type FetchedClaimReply = [ClaimVerdictName, string, string, string, string] | [];
const isFetchedClaim = (v: unknown): v is FetchedClaimReply => (Array.isArray(v) && v.length === 0) || isClaim(v, 5);

/** RELEASE's answer: schedule()'s fields, the failure count and the backoff; or ['stale', …]. */
export const releaseReply = z.custom<string[]>((v) => Array.isArray(v) && isStringFrom(v, 0), { message: "expected RELEASE's answer: strings" });

/**
 * RELEASE_AND_FINISH's answer: moveToFinished's (the next job as BullMQ's array, 0, or an error code), RELEASE's,
 * and the next job's claim. BullMQ's own answer is checked to be an array and handed to BullMQ uncopied.
 */
export type FinishReply = [unknown[] | number, string[], FetchedClaimReply];
export const finishReply = z.custom<FinishReply>(
  (v) => Array.isArray(v) && v.length === 3 && (Array.isArray(v[0]) || typeof v[0] === 'number') && Array.isArray(v[1]) && isStringFrom(v[1], 0) && isFetchedClaim(v[2]),
  { message: "expected RELEASE_AND_FINISH's answer: [moveToFinished's, RELEASE's, the next job's claim]" },
);

/** MOVE_TO_ACTIVE_AND_CLAIM's answer: moveToActive's (BullMQ's array) and the fetched job's claim. */
export type FetchReply = [unknown[], FetchedClaimReply];
export const fetchReply = z.custom<FetchReply>((v) => Array.isArray(v) && v.length === 2 && Array.isArray(v[0]) && isFetchedClaim(v[1]), {
  message: "expected MOVE_TO_ACTIVE_AND_CLAIM's answer: [moveToActive's, the fetched job's claim]",
});
