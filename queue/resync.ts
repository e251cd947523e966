import { RESYNC_JOB, type WorkQueue } from './work-queue.js';

/**
 * The periodic resync tick: a BullMQ Job Scheduler that produces one `resync` job per interval, which a
 * worker turns into a reconcile request for every primary object. Calling it again with another
 * interval changes the schedule in place, so the interval can change while Ripple runs.
 */
export async function upsertResync(queue: WorkQueue, everyMs: number): Promise<void> {
  if (!Number.isFinite(everyMs) || everyMs < 1000) throw new Error(`resync interval must be at least 1000 ms, got ${everyMs}`);
  await queue.bull.upsertJobScheduler('resync', { every: Math.round(everyMs) }, { name: RESYNC_JOB, data: {} });
}

export async function removeResync(queue: WorkQueue): Promise<void> {
  await queue.bull.removeJobScheduler('resync');
}
