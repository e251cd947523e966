import { z } from 'zod';

/**
 * The shapes the state engine reads back from custom resources. They mirror metav1.Condition's
 * OpenAPI validation, so anything the API server accepts parses here and anything that parses here
 * the API server accepts: the CRD generator turns these schemas into the CRDs' status schemas.
 */

/**
 * Seed 002's phases. `Ready` (not `Running`) is the name for "usable": it is the same word as the
 * `Ready` condition `kubectl wait` and kstatus read, and it fits resources that run nothing
 * themselves (a VariantAutoscaling is never "Running"). aim-engine's framework also says `Ready`;
 * only its AIMService maps it to `Running` at the edge, and a resource that wants that can do the same.
 */
export const PHASES = ['Pending', 'Starting', 'Ready', 'Degraded', 'Failed', 'NotAvailable'] as const;
export const PhaseSchema = z.enum(PHASES);
export type Phase = z.infer<typeof PhaseSchema>;

export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
export const ConditionStatusSchema = z.enum(CONDITION_STATUSES);
export type ConditionStatus = z.infer<typeof ConditionStatusSchema>;

/** metav1.Condition's `type` pattern: CamelCase, optionally prefixed by a DNS subdomain and a slash. */
export const CONDITION_TYPE_PATTERN =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
export const CONDITION_TYPE_MAX_LENGTH = 316;

/** metav1.Condition's `reason` pattern; Ripple's own reasons are stricter (see `isCamelCaseReason`). */
export const CONDITION_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
export const CONDITION_REASON_MAX_LENGTH = 1024;
export const CONDITION_MESSAGE_MAX_LENGTH = 32768;

export const ConditionSchema = z.object({
  type: z.string().max(CONDITION_TYPE_MAX_LENGTH).regex(CONDITION_TYPE_PATTERN),
  status: ConditionStatusSchema,
  observedGeneration: z.int().nonnegative().optional(),
  lastTransitionTime: z.iso.datetime({ offset: true }),
  reason: z.string().min(1).max(CONDITION_REASON_MAX_LENGTH).regex(CONDITION_REASON_PATTERN),
  message: z.string().max(CONDITION_MESSAGE_MAX_LENGTH),
});
export type Condition = z.infer<typeof ConditionSchema>;

/**
 * The part of `status` the engine owns. A resource's own status schema spreads `.shape` of this
 * into its object so upstream fields (Kthena's replicas, WVA's desiredOptimizedAlloc) sit beside it.
 */
export const EngineStatusSchema = z.object({
  phase: PhaseSchema.optional(),
  observedGeneration: z.int().nonnegative().optional(),
  conditions: z
    .array(ConditionSchema)
    .refine((list) => new Set(list.map((c) => c.type)).size === list.length, {
      message: 'condition types must be unique (conditions are a map keyed by type)',
    })
    .optional(),
});
export type EngineStatus = z.infer<typeof EngineStatusSchema>;
