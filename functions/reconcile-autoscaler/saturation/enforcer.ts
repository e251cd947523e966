/**
 * The policy applied after saturation targets: scale a model to zero after a retention period
 * without requests (when enabled), and otherwise never let a model drop to zero replicas.
 */
import { DEFAULT_VARIANT_COST } from '../../../api/variantautoscaling.js';
import { byCostThenName } from './types.js';

/** The model's successful requests over the retention window, or why it is unknown. */
export type RequestCount = { status: 'ok'; count: number } | { status: 'error'; message: string };

export interface EnforcerResult {
  targets: Record<string, number>;
  applied: 'scale-to-zero' | 'minimum-replica' | undefined;
  reason?: string;
}

export function enforcePolicy(
  targets: Readonly<Record<string, number>>,
  costs: Readonly<Record<string, number>>,
  policy: { enabled: boolean },
  requestCount: RequestCount | undefined,
  /** Requests waiting in the inference gateway for the model, when it is scraped. */
  pendingRequests?: number,
): EnforcerResult {
  const out = { ...targets };
  if (policy.enabled) {
    // A model just woken from zero has served nothing yet over the retention period; its waiting
    // requests are demand all the same (issue 14 scenario 5: no flapping back to 0).
    if (pendingRequests !== undefined && pendingRequests > 0) return { targets: out, applied: undefined, reason: 'requests are waiting in the inference gateway: not scaling to zero' };
    if (requestCount === undefined) return { targets: out, applied: undefined, reason: 'request count not collected; targets kept' };
    if (requestCount.status === 'error') return { targets: out, applied: undefined, reason: `request count unknown (${requestCount.message}); targets kept` };
    if (requestCount.count > 0) return { targets: out, applied: undefined };
    for (const k of Object.keys(out)) out[k] = 0;
    return { targets: out, applied: 'scale-to-zero', reason: 'no requests during the retention period: scaling to zero' };
  }
  const total = Object.values(out).reduce((a, b) => a + b, 0);
  if (total > 0 || Object.keys(out).length === 0) return { targets: out, applied: undefined };
  const cheapest = Object.keys(out)
    .map((variantName) => ({ variantName, cost: costs[variantName] ?? DEFAULT_VARIANT_COST }))
    .sort(byCostThenName)[0]!;
  out[cheapest.variantName] = 1;
  return { targets: out, applied: 'minimum-replica', reason: `scale-to-zero is off: keeping one replica on the cheapest variant ${cheapest.variantName}` };
}
