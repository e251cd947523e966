/**
 * The handler: one entry point for the four kinds of key on this function's queue.
 */
import type { Handler } from '../../runtime/function.js';
import { autoscalerNames } from './config/names.js';
import { refreshConfig } from './config-store.js';
import { runCycle } from './cycle.js';
import { CONFIG_KEY, OPTIMIZE_KEY, SERVICE_MONITOR_KEY } from './keys.js';
import { reconcileVariant } from './reconcile-variant.js';
import { checkServiceMonitor } from './service-monitor.js';
import { ensureTickInterval } from './tick.js';

export const reconcile: Handler = async (req, ctx) => {
  if (req.key === OPTIMIZE_KEY) return runCycle(ctx, req.reason);
  if (req.key === CONFIG_KEY) {
    const { config } = await refreshConfig(ctx, autoscalerNames(ctx.env).names);
    // A new GLOBAL_OPT_INTERVAL takes effect now, not after the old period runs out.
    await ensureTickInterval(ctx, config.controller.globalOptIntervalMs);
    return;
  }
  if (req.key.startsWith(`${SERVICE_MONITOR_KEY}/`)) return checkServiceMonitor(req.key, ctx);
  return reconcileVariant(req, ctx);
};
