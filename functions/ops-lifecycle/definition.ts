import { z } from 'zod';
import { Resources } from '../../kube/resources.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { mapToSelf } from '../../watcher/mappers.js';
import { reconcile } from './handler.js';
import { CONTROLLED_PODS_SELECTOR, lifecycleInputsChanged, mapServiceToExpectingPods, serviceExpectationMayBeStale } from './triggers.js';

export const OPS_LIFECYCLE = 'ops-lifecycle';

const envSchema = z.object({
  OPS_LIFECYCLE_RESYNC_MS: z.coerce.number().int().positive().default(60_000),
  OPS_LIFECYCLE_CONCURRENCY: z.coerce.number().int().positive().default(4),
});

/**
 * PodOpsLifecycle on Pods labelled kusionstack.io/control=true (seed 001). One reconcile per Pod: the lifecycle
 * state lives in the Pod's own labels, annotations, finalizers and its service-ready condition.
 */
export function definition(env: Readonly<Record<string, string | undefined>> = process.env): FunctionDefinition {
  const config = envSchema.parse(env);
  return {
    name: OPS_LIFECYCLE,
    primary: Resources.pod,
    primaryLabelSelector: CONTROLLED_PODS_SELECTOR,
    triggers: [
      { resource: Resources.pod, labelSelector: CONTROLLED_PODS_SELECTOR, predicate: lifecycleInputsChanged, map: mapToSelf },
      { resource: Resources.service, predicate: serviceExpectationMayBeStale, map: mapServiceToExpectingPods },
    ],
    reconcile,
    resyncIntervalMs: config.OPS_LIFECYCLE_RESYNC_MS,
    concurrency: config.OPS_LIFECYCLE_CONCURRENCY,
  };
}
