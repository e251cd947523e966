import { RESYNC_JOB, type WorkQueue } from './work-queue.js';

/** The id of the Job Scheduler that produces a function's resync tick, one per queue. */
export const RESYNC_SCHEDULER_ID = 'resync';

/**
 * The periodic resync tick: a BullMQ Job Scheduler that produces one `resync` job per interval, which a
 * worker turns into a reconcile request for every primary object. Calling it again with another
 * interval changes the schedule in place, so the interval can change while Ripple runs.
 */
export async function upsertResync(queue: WorkQueue, everyMs: number): Promise<void> {
  if (!Number.isFinite(everyMs) || everyMs < 1000) throw new Error(`resync interval must be at least 1000 ms, got ${everyMs}`);
  await queue.bull.upsertJobScheduler(RESYNC_SCHEDULER_ID, { every: Math.round(everyMs) }, { name: RESYNC_JOB, data: {} });
}

export interface ResyncIntervalChange {
  changed: boolean;
  /** The interval in force before; undefined when no tick was installed. */
  previousMs: number | undefined;
}

/**
 * Makes the tick run every `everyMs`, touching the scheduler only when it differs: a function that
 * re-applies its interval on every tick (the autoscaler's GLOBAL_OPT_INTERVAL) then costs one read and
 * leaves a running schedule alone.
 */
export async function ensureResyncInterval(queue: WorkQueue, everyMs: number): Promise<ResyncIntervalChange> {
  const current = await queue.bull.getJobScheduler(RESYNC_SCHEDULER_ID);
  const previousMs = current?.every ?? undefined;
  if (previousMs === Math.round(everyMs)) return { changed: false, previousMs };
  await upsertResync(queue, everyMs);
  return { changed: true, previousMs };
}
