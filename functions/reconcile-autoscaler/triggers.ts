/**
 * Seed 003's table of allowed and blocked events, as trigger declarations. Each predicate is chosen
 * by the watched resource type (never by `object.kind`, empty on many payloads: a WVA bug), and
 * Generic is blocked everywhere, including the replay a new leader makes; the resync tick covers it.
 *
 * | resource        | create | update                  | delete | enqueues                            |
 * |-----------------|--------|-------------------------|--------|-------------------------------------|
 * | VA              | yes    | no                      | no     | the VA                              |
 * | Deployment      | yes    | no                      | yes    | the VAs naming it (same namespace)  |
 * | ConfigMap (2)²  | yes    | yes                     | no     | `@config` (no VA)                   |
 * | ServiceMonitor  | yes¹   | only deletionTimestamp  | yes    | `@service-monitor/<uid>` (no VA)    |
 *
 * | HPA, ScaledObject³ | managed | managed: annotations or spec changed | managed | `@optimize` (no VA) |
 *
 * ¹ processed, nothing to do: a new ServiceMonitor needs no warning.
 * ² the controller and saturation ConfigMaps, under both generations of names (seed 003's and WVA's
 *   `wva-*` since v0.5.1), with the same predicate.
 * ³ not in seed 003: current WVA's discovery without the CRD (discovery/annotations.ts). "Managed" is
 *   `llm-d.ai/managed: "true"` on the old or the new object, so removing the annotation is seen; status
 *   updates (an HPA writes its status at every sync) are blocked: they change no variant.
 */
import { parseVariantAutoscaling } from '../../api/variantautoscaling.js';
import { Resources } from '../../kube/resources.js';
import type { Mapper, Trigger } from '../../runtime/function.js';
import { mapToSelf } from '../../watcher/mappers.js';
import { and, annotationsChanged, deletionStarted, generationChanged, objectMatches, onlyEvents, passes, type Predicate } from '../../watcher/predicates.js';
import { keepFields, ONLY_METADATA } from '../../watcher/projection.js';
import { watchedConfigMapNames, type AutoscalerNames } from './config/names.js';
import { isManaged } from './discovery/annotations.js';
import { CONFIG_KEY, OPTIMIZE_KEY } from './keys.js';
import { belongsToInstance } from './saturation/active-variants.js';
import { serviceMonitorKey } from './service-monitor.js';
import { vasTargetingDeployment } from './target/resolve.js';

/** Deployment → the VAs in its namespace whose scaleTargetRef names it, looked up in the watcher's VA store. */
export function deploymentToVariantAutoscalings(controllerInstance: string | undefined): Mapper {
  return (event, ctx) => {
    const namespace = event.object.metadata.namespace;
    if (namespace === undefined) return [];
    const vas = ctx.list(Resources.variantAutoscaling, namespace).flatMap((o) => {
      const parsed = parseVariantAutoscaling(o);
      return parsed.ok && belongsToInstance(parsed.value, controllerInstance) ? [parsed.value] : [];
    });
    return vasTargetingDeployment(vas, { namespace, name: event.object.metadata.name });
  };
}

/** Create, delete, and the update that sets deletionTimestamp (a finalizer holds the object). */
const serviceMonitorEvents: Predicate = {
  create: () => true,
  update: (e) => passes(deletionStarted, e),
  delete: () => true,
  generic: () => false,
};

/** An annotated HPA or ScaledObject appeared, went, or changed what it says: a cycle now, not at the tick. */
export const annotatedScalerEvents: Predicate = {
  create: (e) => isManaged(e.object.metadata),
  update: (e) =>
    (isManaged(e.old.metadata) || isManaged(e.object.metadata)) &&
    (passes(annotationsChanged, e) || passes(generationChanged, e) || passes(deletionStarted, e)),
  delete: (e) => isManaged(e.object.metadata),
  generic: () => false,
};

const mapServiceMonitor: Mapper = (event) => (event.type === 'create' ? [] : [serviceMonitorKey(event.object.metadata.uid)]);

export function autoscalerTriggers(names: AutoscalerNames): Trigger[] {
  const configMaps = watchedConfigMapNames(names);
  return [
    {
      resource: Resources.variantAutoscaling,
      predicate: and(onlyEvents('create'), objectMatches((o) => belongsToInstance({ metadata: o.metadata }, names.controllerInstance))),
      map: mapToSelf,
      projection: keepFields('spec'), // the Deployment mapper below reads scaleTargetRef from this store
    },
    {
      resource: Resources.deployment,
      predicate: onlyEvents('create', 'delete'),
      map: deploymentToVariantAutoscalings(names.controllerInstance),
      projection: ONLY_METADATA,
    },
    {
      resource: Resources.configMap,
      namespace: names.namespace,
      predicate: and(
        onlyEvents('create', 'update'),
        objectMatches((o) => o.metadata.namespace === names.namespace && configMaps.has(o.metadata.name)),
      ),
      // Refresh the configuration only: the next cycle reads it (seed 003 example 4).
      map: () => [CONFIG_KEY],
      projection: ONLY_METADATA,
    },
    {
      resource: Resources.serviceMonitor,
      namespace: names.namespace,
      // Watched only while the CRD is installed (Prometheus Operator); absent, it is no error.
      optional: true,
      predicate: and(serviceMonitorEvents, objectMatches((o) => o.metadata.name === names.serviceMonitor)),
      map: mapServiceMonitor,
      projection: ONLY_METADATA,
    },
    { resource: Resources.horizontalPodAutoscaler, predicate: annotatedScalerEvents, map: () => [OPTIMIZE_KEY], projection: ONLY_METADATA },
    // Watched only while KEDA's CRD is installed.
    { resource: Resources.scaledObject, optional: true, predicate: annotatedScalerEvents, map: () => [OPTIMIZE_KEY], projection: ONLY_METADATA },
  ];
}
