/**
 * reconcile-autoscaler: llm-d's VariantAutoscaling (WVA), with seed 003's event handling. See
 * docs/autoscaler.md.
 *
 * The resync tick runs the optimization cycle (`@optimize`) every GLOBAL_OPT_INTERVAL instead of
 * enqueueing every VA; the cycle decides and then enqueues every VA itself.
 */
import { Resources } from '../../kube/resources.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { DEFAULT_GLOBAL_OPT_INTERVAL_MS } from './config/controller-config.js';
import { autoscalerNames } from './config/names.js';
import { reconcile } from './handler.js';
import { FUNCTION_NAME, OPTIMIZE_KEY } from './keys.js';
import { registerAutoscalerMetrics } from './metrics/collector.js';
import { sweepVariantState } from './sweep.js';
import { autoscalerTriggers } from './triggers.js';

export function definition(env: Readonly<Record<string, string | undefined>> = process.env): FunctionDefinition {
  const { names } = autoscalerNames(env);
  return {
    name: FUNCTION_NAME,
    primary: Resources.variantAutoscaling,
    triggers: autoscalerTriggers(names),
    reconcile,
    // Until the ConfigMap is read; the cycle then applies GLOBAL_OPT_INTERVAL (tick.ts).
    resyncIntervalMs: DEFAULT_GLOBAL_OPT_INTERVAL_MS,
    concurrency: 4,
    resyncKeys: async () => [OPTIMIZE_KEY],
    sweep: sweepVariantState,
    metrics: registerAutoscalerMetrics,
  };
}
