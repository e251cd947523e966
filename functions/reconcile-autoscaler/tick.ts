/**
 * GLOBAL_OPT_INTERVAL is the period of this function's resync tick (a BullMQ Job Scheduler). The
 * host installs the tick with the definition's default when a watcher becomes leader, so the
 * configured interval is re-applied here whenever the two differ: at once when the ConfigMap
 * changes, and at every cycle (which heals a leader change within one tick).
 */
import type { HandlerContext } from '../../runtime/function.js';
import { upsertResync } from '../../queue/resync.js';
import { WorkQueue } from '../../queue/work-queue.js';
import { FUNCTION_NAME } from './keys.js';

/** queue/resync.ts installs the tick under this scheduler id. */
const TICK_SCHEDULER_ID = 'resync';

/** Returns the interval that was in force before, or undefined when it already matched. */
export async function ensureTickInterval(ctx: Pick<HandlerContext, 'redis' | 'prefix' | 'log'>, everyMs: number): Promise<number | undefined> {
  // A queue object over the handler's own connection (BullMQ leaves a shared connection open on close).
  const queue = new WorkQueue({ name: FUNCTION_NAME, connection: ctx.redis, prefix: ctx.prefix });
  try {
    const current = await queue.bull.getJobScheduler(TICK_SCHEDULER_ID);
    if (current?.every === everyMs) return undefined;
    await upsertResync(queue, everyMs);
    ctx.log.info({ fromMs: current?.every, toMs: everyMs }, 'optimization interval changed (GLOBAL_OPT_INTERVAL)');
    return current?.every ?? 0;
  } finally {
    await queue.close();
  }
}
