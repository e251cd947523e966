import type { Logger } from '../base/log.js';
import { runScript } from './run-script.js';
import { SWEEP } from './scripts.js';
import type { WorkQueue } from './work-queue.js';

/**
 * Removes what belongs to no live job or claim from a queue's own structures, on every resync tick:
 * pending ids whose job is gone past the grace period, claims whose lease ran out long ago, failure
 * counts of keys with nothing scheduled, RELEASE answers too old to be resent. A key that still had a
 * request recorded (a dirty mark or a due time) gets it recorded afresh by the same script, and its job is
 * added here; should the reply be lost, the resent SWEEP hands the same job out again. Returns how many
 * entries it removed.
 */
export async function sweepQueue(queue: WorkQueue, log: Logger): Promise<number> {
  const k = queue.keys;
  const raw = await runScript(queue.connection, SWEEP, queue.scriptKeys, [k.jobKeyPrefix]);
  const [removed = '0', ...adds] = Array.isArray(raw) ? raw.map(String) : ['0'];
  let requeued = 0;
  for (let i = 0; i + 4 < adds.length; i += 5) {
    const [key, , jobId, delayMs, readd] = adds.slice(i, i + 5) as [string, string, string, string, string];
    await queue.apply(key, { action: 'add', jobId, delayMs: Number(delayMs), readd: readd === '1' }, 'swept');
    requeued++;
  }
  const n = Number(removed);
  if (n > 0) log.info({ queue: queue.name, removed: n, requeued }, 'swept orphaned queue entries');
  return n;
}
