/**
 * Gang scheduling as Kthena does it: one Volcano PodGroup per ServingGroup, only when Volcano's
 * PodGroup CRD is installed and the pods go to the `volcano` scheduler. `minMember` counts the pods of
 * the minimum role instances (`gangPolicy.minRoleReplicas`, default all), `minResources` sums their
 * container requests. Unlike Kthena, the roles are the group's own revision's, so a partition-protected
 * group keeps the gang it was created with.
 */
import { VOLCANO_SCHEDULER_NAME, type ModelServing, type PodTemplate, type Role } from '../../../api/modelserving.js';
import { ANNOTATION_VOLCANO_GROUP_NAME, ANNOTATION_VOLCANO_QUEUE, LABEL_GROUP_NAME, LABEL_NAME, LABEL_ROLE, LABEL_ROLE_ID } from './names.js';
import { controllerOwnerReference } from './owner.js';
import { formatQuantity, parseQuantity } from './quantity.js';
import { canonicalJson } from './revision.js';
import type { V1OwnerReference } from '@kubernetes/client-node';

export interface ClusterCapabilities {
  /** The `podgroups.scheduling.volcano.sh` CRD exists (Volcano is installed). */
  volcanoPodGroups: boolean;
  /** That CRD's schema has `spec.subGroupPolicy` (per-role gangs). */
  volcanoSubGroupPolicy?: boolean;
}

/**
 * The scheduler the pods get. An explicit `spec.schedulerName` always wins. Left empty, it is
 * `volcano` when Volcano is installed (Kthena's default, with gang scheduling) and otherwise
 * undefined: the pod template's own choice, normally the cluster's default scheduler.
 */
export function effectiveSchedulerName(ms: ModelServing, cluster: ClusterCapabilities): string | undefined {
  if (ms.spec.schedulerName) return ms.spec.schedulerName;
  return cluster.volcanoPodGroups ? VOLCANO_SCHEDULER_NAME : undefined;
}

export function gangEnabled(ms: ModelServing, cluster: ClusterCapabilities): boolean {
  return cluster.volcanoPodGroups && effectiveSchedulerName(ms, cluster) === VOLCANO_SCHEDULER_NAME;
}

export interface PodGroupSpec {
  minMember: number;
  minResources?: Record<string, string>;
  queue?: string;
  networkTopology?: Record<string, unknown>;
  subGroupPolicy?: Array<Record<string, unknown>>;
}

/** A `scheduling.volcano.sh/v1beta1` PodGroup, as a plain object (client-node has no type for it). */
export interface PodGroupObject {
  apiVersion: 'scheduling.volcano.sh/v1beta1';
  kind: 'PodGroup';
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: V1OwnerReference[];
  };
  spec: PodGroupSpec;
}

function minInstances(ms: ModelServing, role: Role): number {
  const min = ms.spec.template.gangPolicy?.minRoleReplicas?.[role.name];
  return min === undefined ? role.replicas : Math.min(min, role.replicas);
}

function addRequests(total: Map<string, bigint>, template: PodTemplate | undefined, times: number): void {
  if (!template || times <= 0) return;
  for (const c of template.spec.containers) {
    const requests = (c as { resources?: { requests?: Record<string, unknown> } }).resources?.requests ?? {};
    for (const [name, q] of Object.entries(requests)) {
      const nanos = parseQuantity(q);
      if (nanos !== undefined) total.set(name, (total.get(name) ?? 0n) + nanos * BigInt(times));
    }
  }
}

export function desiredPodGroupSpec(ms: ModelServing, roles: readonly Role[], cluster: ClusterCapabilities): PodGroupSpec {
  let minMember = 0;
  const resources = new Map<string, bigint>();
  for (const role of roles) {
    const n = minInstances(ms, role);
    minMember += (1 + role.workerReplicas) * n;
    addRequests(resources, role.entryTemplate, n);
    addRequests(resources, role.workerTemplate, n * role.workerReplicas);
  }
  const spec: PodGroupSpec = { minMember };
  if (resources.size) {
    spec.minResources = Object.fromEntries([...resources.entries()].sort().map(([k, v]) => [k, formatQuantity(v)]));
  }
  const queue = ms.metadata.annotations?.[ANNOTATION_VOLCANO_QUEUE];
  if (queue) spec.queue = queue;
  const topology = ms.spec.template.networkTopology;
  if (topology?.groupPolicy) spec.networkTopology = { ...topology.groupPolicy };
  if (cluster.volcanoSubGroupPolicy) {
    spec.subGroupPolicy = roles.map((role) => ({
      name: role.name,
      labelSelector: { matchLabels: { [LABEL_NAME]: ms.metadata.name, [LABEL_ROLE]: role.name } },
      matchLabelKeys: [LABEL_ROLE_ID],
      subGroupSize: 1 + role.workerReplicas,
      minSubGroups: minInstances(ms, role),
      ...(topology?.rolePolicy ? { networkTopology: { ...topology.rolePolicy } } : {}),
    }));
  }
  return spec;
}

export function desiredPodGroup(ms: ModelServing, groupName: string, roles: readonly Role[], cluster: ClusterCapabilities): PodGroupObject {
  return {
    apiVersion: 'scheduling.volcano.sh/v1beta1',
    kind: 'PodGroup',
    metadata: {
      name: groupName,
      namespace: ms.metadata.namespace,
      labels: { [LABEL_NAME]: ms.metadata.name, [LABEL_GROUP_NAME]: groupName },
      annotations: { [ANNOTATION_VOLCANO_GROUP_NAME]: groupName },
      ownerReferences: [controllerOwnerReference(ms)],
    },
    spec: desiredPodGroupSpec(ms, roles, cluster),
  };
}

/** Whether an existing PodGroup's spec differs from the desired one in anything Kthena manages. */
export function podGroupSpecDiffers(observed: Partial<PodGroupSpec> | undefined, desired: PodGroupSpec): boolean {
  const o = observed ?? {};
  const quantities = (m: Record<string, unknown> | undefined) =>
    JSON.stringify(Object.entries(m ?? {}).map(([k, v]) => [k, formatQuantity(parseQuantity(v) ?? 0n)]).sort());
  return (
    (o.minMember ?? 0) !== desired.minMember ||
    quantities(o.minResources) !== quantities(desired.minResources) ||
    (o.queue ?? '') !== (desired.queue ?? '') ||
    canonicalJson(o.networkTopology) !== canonicalJson(desired.networkTopology) ||
    canonicalJson(o.subGroupPolicy) !== canonicalJson(desired.subGroupPolicy)
  );
}
