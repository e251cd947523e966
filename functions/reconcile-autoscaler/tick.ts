/**
 * GLOBAL_OPT_INTERVAL is the period of this function's resync tick (a BullMQ Job Scheduler). The
 * host installs the tick with the definition's default when a watcher becomes leader, so the
 * configured interval is re-applied here whenever the two differ: at once when the ConfigMap
 * changes, and at every cycle (which heals a leader change within one tick).
 */
import type { HandlerContext } from '../../runtime/function.js';
import { FUNCTION_NAME } from './keys.js';

export async function ensureTickInterval(ctx: Pick<HandlerContext, 'setResyncInterval' | 'log'>, everyMs: number): Promise<void> {
  const { changed, previousMs } = await ctx.setResyncInterval(FUNCTION_NAME, everyMs);
  if (changed) ctx.log.info({ fromMs: previousMs, toMs: everyMs }, 'optimization interval changed (GLOBAL_OPT_INTERVAL)');
}
