import { z } from 'zod';

export const RECONCILE_MODELSERVING = 'reconcile-modelserving';

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
  /**
   * Batch window for child events (Trigger.batchMs): a Pod or Service event reconciles its ModelServing this
   * long after it, so the pods of a group turning Ready one after another make one reconcile, not one each.
   * 0 reconciles on every event at once. The ModelServing's own events are never delayed.
   */
  MODELSERVING_CHILD_BATCH_MS: z.coerce.number().int().nonnegative().default(100),
  /** Pods no scheduler has looked at for this long are reported on status. */
  MODELSERVING_UNSCHEDULED_AFTER_SECONDS: z.coerce.number().int().positive().default(60),
  /**
   * A ModelServing whose deletion has waited this long on pods stuck in PodOpsLifecycle (ops-lifecycle not running,
   * a cooperator that never lets go) gets one Warning Event naming them (lifecycle.ts drainFollowUp).
   */
  MODELSERVING_DELETION_WARN_AFTER_MS: z.coerce.number().int().positive().default(600_000),
  /**
   * Plan from a worker-local cache of the children (children-cache.ts) instead of listing them every
   * reconcile; "false" lists every time. Without Volcano only (PodGroups are always listed). Unset, it
   * is on in a worker and off when served as an HTTP function (servedAsHttpFunction).
   */
  MODELSERVING_CHILDREN_CACHE: z.enum(['true', 'false'], { error: 'MODELSERVING_CHILDREN_CACHE must be "true" or "false"' }).optional(),
});
export type ModelServingConfig = Omit<z.infer<typeof modelServingConfigSchema>, 'MODELSERVING_CHILDREN_CACHE'> & { MODELSERVING_CHILDREN_CACHE: 'true' | 'false' };

/**
 * Whether this process serves functions over HTTP (`ripple serve`): Knative sets K_SERVICE in every
 * revision's container, and the OpenFaaS manifests run the image with RIPPLE_MODE=serve. There the
 * platform throttles the CPU between requests, so a cache's watches fall behind and every reconcile
 * would wait for it and list anyway: the children cache is off unless asked for.
 */
export function servedAsHttpFunction(env: Readonly<Record<string, string | undefined>>): boolean {
  return env['RIPPLE_MODE'] === 'serve' || Boolean(env['K_SERVICE']);
}

const parsed = new WeakMap<Readonly<Record<string, string | undefined>>, ModelServingConfig>();

/**
 * The settings from `env`, parsed once per environment object: every reconcile asks, and the
 * environment a process runs with does not change under it.
 */
export function modelServingConfig(env: Readonly<Record<string, string | undefined>>): ModelServingConfig {
  let config = parsed.get(env);
  if (!config) {
    const read = modelServingConfigSchema.parse(env);
    config = { ...read, MODELSERVING_CHILDREN_CACHE: read.MODELSERVING_CHILDREN_CACHE ?? (servedAsHttpFunction(env) ? 'false' : 'true') };
    parsed.set(env, config);
  }
  return config;
}
