/** A Kubernetes resource type, as the watcher and the generic client address it. */
export interface ResourceRef {
  group: string; // '' for the core group
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export function apiVersionOf(ref: ResourceRef): string {
  return ref.group ? `${ref.group}/${ref.version}` : ref.version;
}

/** The collection path, cluster-wide or in one namespace. */
export function collectionPath(ref: ResourceRef, namespace?: string): string {
  const base = ref.group ? `/apis/${ref.group}/${ref.version}` : `/api/${ref.version}`;
  return ref.namespaced && namespace ? `${base}/namespaces/${namespace}/${ref.plural}` : `${base}/${ref.plural}`;
}

export function objectPath(ref: ResourceRef, namespace: string | undefined, name: string): string {
  return `${collectionPath(ref, namespace)}/${encodeURIComponent(name)}`;
}

/** A readable id for logs and metrics: `deployments.apps/v1`. */
export function resourceId(ref: ResourceRef): string {
  return `${ref.plural}${ref.group ? `.${ref.group}` : ''}/${ref.version}`;
}

export const Resources = {
  pod: { group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true },
  service: { group: '', version: 'v1', kind: 'Service', plural: 'services', namespaced: true },
  configMap: { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
  event: { group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true },
  endpointSlice: { group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', plural: 'endpointslices', namespaced: true },
  deployment: { group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', namespaced: true },
  controllerRevision: { group: 'apps', version: 'v1', kind: 'ControllerRevision', plural: 'controllerrevisions', namespaced: true },
  lease: { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true },
  modelServing: { group: 'workload.serving.volcano.sh', version: 'v1alpha1', kind: 'ModelServing', plural: 'modelservings', namespaced: true },
  leaderWorkerSet: { group: 'leaderworkerset.x-k8s.io', version: 'v1', kind: 'LeaderWorkerSet', plural: 'leaderworkersets', namespaced: true },
  variantAutoscaling: { group: 'llmd.ai', version: 'v1alpha1', kind: 'VariantAutoscaling', plural: 'variantautoscalings', namespaced: true },
  serviceMonitor: { group: 'monitoring.coreos.com', version: 'v1', kind: 'ServiceMonitor', plural: 'servicemonitors', namespaced: true },
  podGroup: { group: 'scheduling.volcano.sh', version: 'v1beta1', kind: 'PodGroup', plural: 'podgroups', namespaced: true },
  horizontalPodAutoscaler: { group: 'autoscaling', version: 'v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers', namespaced: true },
  scaledObject: { group: 'keda.sh', version: 'v1alpha1', kind: 'ScaledObject', plural: 'scaledobjects', namespaced: true },
} as const satisfies Record<string, ResourceRef>;
