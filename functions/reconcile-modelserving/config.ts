import { z } from 'zod';

/** reconcile-modelserving's settings, from the environment (zod at the boundary). */
export const modelServingConfigSchema = z.object({
  /** Resync tick: every ModelServing is reconciled at least this often. */
  MODELSERVING_RESYNC_MS: z.coerce.number().int().positive().default(60_000),
  /**
   * Reconciles in flight per worker process (different ModelServings). A reconcile mostly waits on
   * the API server, so a few more than cores (Kthena runs 5 workers); measured in
   * bench/modelserving-converge.ts, 4 left the first pass over 20 new ModelServings queue-bound.
   */
  MODELSERVING_CONCURRENCY: z.coerce.number().int().positive().default(8),
  /** API requests in flight per reconcile while applying one stage of a plan (pod creates, deletes). */
  MODELSERVING_APPLY_CONCURRENCY: z.coerce.number().int().positive().default(8),
  /** Pods no scheduler has looked at for this long are reported on status. */
  MODELSERVING_UNSCHEDULED_AFTER_SECONDS: z.coerce.number().int().positive().default(60),
  /** While pod deletions wait on PodOpsLifecycle, look again this often. */
  MODELSERVING_LIFECYCLE_POLL_MS: z.coerce.number().int().positive().default(2_000),
});
export type ModelServingConfig = z.infer<typeof modelServingConfigSchema>;

export function modelServingConfig(env: Readonly<Record<string, string | undefined>>): ModelServingConfig {
  return modelServingConfigSchema.parse(env);
}
