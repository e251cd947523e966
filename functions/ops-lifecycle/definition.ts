import { Resources } from '../../kube/resources.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { mapToSelf } from '../../watcher/mappers.js';
import { keepFields } from '../../watcher/projection.js';
import { opsLifecycleEnvSchema } from './config.js';
import { reconcile } from './handler.js';
import { ENDPOINT_SLICE } from './pod-access/endpoint-slices.js';
import {
  CONTROLLED_PODS_SELECTOR,
  endpointSliceStoppedRouting,
  lifecycleInputsChanged,
  mapEndpointSliceToPods,
  mapServiceToCoveredPods,
  mapServiceToExpectingPods,
  mapToSiblingsAwaitingPreCheck,
  podReturnedToService,
  serviceCooperationChanged,
  serviceExpectationMayBeStale,
} from './triggers.js';

export const OPS_LIFECYCLE = 'ops-lifecycle';

/**
 * PodOpsLifecycle on Pods labelled kusionstack.io/control=true (seed 001). One reconcile per Pod: the lifecycle
 * state lives in the Pod's own labels, annotations, finalizers and its service-ready condition.
 */
export function definition(env: Readonly<Record<string, string | undefined>> = process.env): FunctionDefinition {
  const config = opsLifecycleEnvSchema.parse(env);
  return {
    name: OPS_LIFECYCLE,
    primary: Resources.pod,
    primaryLabelSelector: CONTROLLED_PODS_SELECTOR,
    triggers: [
      { resource: Resources.pod, labelSelector: CONTROLLED_PODS_SELECTOR, predicate: lifecycleInputsChanged, map: mapToSelf, projection: keepFields('status.conditions') },
      // The availability budget: a Pod back in service lets its owner's next Pod past pre-check.
      {
        resource: Resources.pod,
        labelSelector: CONTROLLED_PODS_SELECTOR,
        predicate: podReturnedToService,
        map: mapToSiblingsAwaitingPreCheck,
        projection: keepFields('status.conditions'),
      },
      { resource: Resources.service, predicate: serviceExpectationMayBeStale, map: mapServiceToExpectingPods, projection: keepFields('spec.selector') },
      // The in-tree Service cooperator (OPS_LIFECYCLE_SERVICE_COOPERATION): a labelled Service starts or stops
      // covering Pods.
      { resource: Resources.service, predicate: serviceCooperationChanged, map: mapServiceToCoveredPods, projection: keepFields('spec.selector') },
      // A preparing Pod may wait for its endpoints to go (OPS_LIFECYCLE_TRAFFIC_OFF=endpointslices).
      { resource: ENDPOINT_SLICE, predicate: endpointSliceStoppedRouting, map: mapEndpointSliceToPods, projection: keepFields('endpoints') },
    ],
    reconcile,
    resyncIntervalMs: config.OPS_LIFECYCLE_RESYNC_MS,
    concurrency: config.OPS_LIFECYCLE_CONCURRENCY,
  };
}
