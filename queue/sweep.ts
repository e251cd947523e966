import type { Logger } from '../runtime/log.js';
import { runScript } from './run-script.js';
import { SWEEP } from './scripts.js';
import type { WorkQueue } from './work-queue.js';

/**
 * Removes what belongs to no live job or claim from a queue's own structures, on every resync tick:
 * pending ids whose job is gone past the grace period, claims whose lease ran out long ago, failure
 * counts of keys with nothing scheduled. A key that still had a request recorded (a dirty mark or a
 * due time) is enqueued afresh rather than dropped. Returns how many entries it removed.
 */
export async function sweepQueue(queue: WorkQueue, log: Logger): Promise<number> {
  const k = queue.keys;
  const raw = await runScript(queue.connection, SWEEP, queue.scriptKeys, [k.jobKeyPrefix]);
  const [removed, ...requeue] = Array.isArray(raw) ? raw.map(String) : ['0'];
  await queue.addMany(requeue, 'swept');
  const n = Number(removed ?? 0);
  if (n > 0) log.info({ queue: queue.name, removed: n, requeued: requeue.length }, 'swept orphaned queue entries');
  return n;
}
