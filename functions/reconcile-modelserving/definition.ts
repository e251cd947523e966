import { MODEL_SERVING_GROUP, MODEL_SERVING_KIND } from '../../api/modelserving.js';
import { Resources } from '../../kube/resources.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { mapToControllerOwner, mapToSelf } from '../../watcher/mappers.js';
import { generationChanged, onlyEvents } from '../../watcher/predicates.js';
import { keepFields, ONLY_METADATA } from '../../watcher/projection.js';
import { modelServingConfig, RECONCILE_MODELSERVING } from './config.js';
import { reconcile } from './handler.js';
import { sweepRoleStatus } from './sweep.js';
import { CHILDREN_SELECTOR, modelServingChanged, podFactsChanged, serviceChanged } from './triggers.js';

export { RECONCILE_MODELSERVING };

const toOwner = mapToControllerOwner({ group: MODEL_SERVING_GROUP, kind: MODEL_SERVING_KIND });

/**
 * Kthena's ModelServing controller as a function: For(ModelServing), Owns(Pod), Owns(Service),
 * Owns(ControllerRevision, deletes only), Owns(PodGroup) when Volcano is installed, LeaderWorkerSets
 * (each served through the ModelServing of its name), plus the resync tick. Children are watched
 * through the label every one of them carries, so the watch never streams the cluster's other pods.
 */
export function definition(env: Readonly<Record<string, string | undefined>> = process.env): FunctionDefinition {
  const config = modelServingConfig(env);
  const batchMs = config.MODELSERVING_CHILD_BATCH_MS;
  return {
    name: RECONCILE_MODELSERVING,
    primary: Resources.modelServing,
    triggers: [
      { resource: Resources.modelServing, predicate: modelServingChanged, map: mapToSelf, projection: ONLY_METADATA },
      { resource: Resources.pod, labelSelector: CHILDREN_SELECTOR, predicate: podFactsChanged, map: toOwner, batchMs, projection: keepFields('spec.nodeName', 'status.phase', 'status.conditions', 'status.containerStatuses', 'status.initContainerStatuses') },
      { resource: Resources.service, labelSelector: CHILDREN_SELECTOR, predicate: serviceChanged, map: toOwner, batchMs, projection: ONLY_METADATA },
      // A ControllerRevision only matters when someone removes it (it is recreated for the update revision).
      { resource: Resources.controllerRevision, labelSelector: CHILDREN_SELECTOR, predicate: onlyEvents('delete'), map: toOwner, projection: ONLY_METADATA },
      { resource: Resources.podGroup, labelSelector: CHILDREN_SELECTOR, optional: true, predicate: onlyEvents('delete'), map: toOwner, projection: ONLY_METADATA },
      // A LeaderWorkerSet is served through the ModelServing of its name (lws/): its spec changes and its
      // creation reconcile that key. Optional: without the CRD the watch is empty.
      { resource: Resources.leaderWorkerSet, optional: true, predicate: generationChanged, map: mapToSelf, projection: ONLY_METADATA },
    ],
    reconcile,
    sweep: sweepRoleStatus,
    resyncIntervalMs: config.MODELSERVING_RESYNC_MS,
    concurrency: config.MODELSERVING_CONCURRENCY,
  };
}
