/**
 * A per-VA decision of one optimization cycle. It crosses Redis from the engine tick to the per-VA
 * reconcile that writes status, so it has a zod schema.
 */
import { z } from 'zod';

const condition = z.object({
  type: z.string().min(1),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().min(1),
  message: z.string(),
});

export const variantDecisionSchema = z.object({
  /** `namespace/name` of the VA. */
  key: z.string().min(1),
  vaName: z.string().min(1),
  namespace: z.string().min(1),
  modelID: z.string().min(1),
  /** The Deployment's name. */
  variantName: z.string().min(1),
  /** The Deployment's uid: a decision is never carried over to a Deployment recreated under the same name. */
  targetUid: z.string().optional(),
  accelerator: z.string().min(2),
  cost: z.number().min(0),
  currentReplicas: z.number().int().min(0),
  previousDesiredReplicas: z.number().int().min(0).optional(),
  desiredReplicas: z.number().int().min(0),
  action: z.enum(['scale-up', 'scale-down', 'no-change']),
  source: z.enum(['saturation', 'transition', 'scale-to-zero', 'scale-from-zero', 'minimum-replica', 'no-metrics', 'stale-metrics', 'prometheus-error', 'prometheus-auth']),
  reason: z.string(),
  limited: z.boolean(),
  /** RFC 3339, when the cycle ran: becomes `desiredOptimizedAlloc.lastRunTime`. */
  decidedAt: z.iso.datetime({ offset: true }),
  /** RFC 3339: after this the decision is not published any more (the cycles stopped deciding it). */
  validUntil: z.iso.datetime({ offset: true }).optional(),
  metricsAvailable: condition,
  optimizationReady: condition,
});
export type VariantDecision = z.infer<typeof variantDecisionSchema>;

export function parseVariantDecision(value: unknown): { ok: true; value: VariantDecision } | { ok: false; error: string } {
  const r = variantDecisionSchema.safeParse(value);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
}
