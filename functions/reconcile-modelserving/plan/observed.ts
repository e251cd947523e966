/**
 * The observed state, indexed: a ModelServing's pods grouped into ServingGroups and role instances,
 * with the facts the planners decide on (readiness, failure, revision, deletion cost). Pods are
 * taken as the API server returns them (client-node's V1Pod); nothing here reads a clock.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ModelServing } from '../../../api/modelserving.js';
import {
  ANNOTATION_POD_DELETION_COST,
  ENV_GROUP_SIZE,
  LABEL_ENTRY,
  LABEL_GROUP_NAME,
  LABEL_REVISION,
  LABEL_ROLE,
  LABEL_ROLE_ID,
  LABEL_ROLE_TEMPLATE_HASH,
  parseOrdinal,
} from './names.js';
import { ownershipOf, type Ownership } from './owner.js';

/**
 * `{ resourceVersion }` of what a write was planned from, or nothing when it has none: spread into an action so
 * the write carries it as its precondition (docs/kernel.md, "Effects").
 */
export function versionOf(meta: { resourceVersion?: string | undefined } | undefined): { resourceVersion?: string } {
  return meta?.resourceVersion ? { resourceVersion: meta.resourceVersion } : {};
}

export interface PodFacts {
  name: string;
  uid: string;
  /** The version planned from: a delete carries it as its precondition (docs/kernel.md, "Effects"). */
  resourceVersion?: string;
  groupName: string;
  ordinal: number;
  roleName: string;
  roleId: string;
  roleIndex: number;
  /** 0 for the entry pod, 1..workerReplicas for workers. */
  podIndex: number;
  entry: boolean;
  revision: string | undefined;
  roleTemplateHash: string | undefined;
  /** `metadata.deletionTimestamp` is set: the pod is going away and its name is still taken. */
  terminating: boolean;
  phase: string;
  /** Phase Running and condition Ready=True. */
  runningAndReady: boolean;
  /** Kthena's error pod: phase Failed, or a restarted (init) container while not running and ready. */
  failed: boolean;
  /** Phase Failed or Succeeded: the pod exited and will not run again (failed whatever its restarts). */
  exited: boolean;
  /** Restarts of all its (init) containers, for the per-pod restart memory (plan/recovery.ts). */
  restarts: number;
  /** When the pod last stopped being ready (or was created), for `restartGracePeriodSeconds`. */
  unhealthySince: number | undefined;
  deletionCost: number;
  /** A scheduler has looked at the pod (PodScheduled condition present, or a node assigned). */
  seenByScheduler: boolean;
  schedulerName: string | undefined;
  createdAt: number | undefined;
  /** The pod's `GROUP_SIZE` env var: how many pods its role instance was created with. */
  groupSize: number | undefined;
}

/** One instance of a role in a ServingGroup (`<role>-<index>`). */
export interface ObservedRoleInstance {
  roleName: string;
  roleId: string;
  index: number;
  pods: PodFacts[];
}

export interface ObservedGroup {
  name: string;
  ordinal: number;
  /** Instances by role name, then by index. */
  roles: Map<string, Map<number, ObservedRoleInstance>>;
  pods: PodFacts[];
}

export interface PodIndex {
  groups: Map<number, ObservedGroup>;
  /** Pods of a previous ModelServing with the same name (kthena#1712): delete them. */
  stale: Array<{ name: string; uid: string; resourceVersion?: string; terminating: boolean }>;
  /** Every pod name that exists (ours, stale or foreign): a create with that name would fail. */
  takenNames: Set<string>;
  /** Pods carrying our labels that we cannot place (foreign owner or a malformed name). */
  ignored: string[];
}

export function toMillis(t: Date | string | undefined | null): number | undefined {
  if (t === undefined || t === null) return undefined;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

export function podFacts(pod: V1Pod, msName: string): PodFacts | undefined {
  const meta = pod.metadata;
  const labels = meta?.labels ?? {};
  const name = meta?.name;
  const groupName = labels[LABEL_GROUP_NAME];
  const roleName = labels[LABEL_ROLE];
  const roleIdValue = labels[LABEL_ROLE_ID];
  if (!name || !groupName || !roleName || !roleIdValue) return undefined;
  const ordinal = parseOrdinal(groupName, msName);
  const roleIndex = parseOrdinal(roleIdValue, roleName);
  const podIndex = parseOrdinal(name, `${groupName}-${roleIdValue}`);
  if (ordinal === undefined || roleIndex === undefined || podIndex === undefined) return undefined;

  const status = pod.status ?? {};
  const phase = status.phase ?? 'Pending';
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  const runningAndReady = phase === 'Running' && ready?.status === 'True';
  const statuses = [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])];
  const restarts = statuses.reduce((n, s) => n + (s.restartCount ?? 0), 0);
  const restarted = restarts > 0;
  // Succeeded counts too: a serving pod that exited will never become ready again.
  const failed =
    phase === 'Failed' || phase === 'Succeeded' || (!runningAndReady && restarted && (phase === 'Running' || phase === 'Pending'));
  const createdAt = toMillis(meta?.creationTimestamp);
  const cost = Number.parseInt(meta?.annotations?.[ANNOTATION_POD_DELETION_COST] ?? '', 10);

  return {
    name,
    uid: meta?.uid ?? '',
    ...versionOf(meta),
    groupName,
    ordinal,
    roleName,
    roleId: roleIdValue,
    roleIndex,
    podIndex,
    entry: labels[LABEL_ENTRY] === 'true',
    revision: labels[LABEL_REVISION],
    roleTemplateHash: labels[LABEL_ROLE_TEMPLATE_HASH],
    terminating: meta?.deletionTimestamp !== undefined && meta?.deletionTimestamp !== null,
    phase,
    runningAndReady,
    failed,
    exited: phase === 'Failed' || phase === 'Succeeded',
    restarts,
    unhealthySince: ready && ready.status !== 'True' ? (toMillis(ready.lastTransitionTime) ?? createdAt) : createdAt,
    deletionCost: Number.isFinite(cost) ? cost : 0,
    seenByScheduler: Boolean(pod.spec?.nodeName) || Boolean(status.conditions?.some((c) => c.type === 'PodScheduled')),
    schedulerName: pod.spec?.schedulerName,
    createdAt,
    groupSize: groupSizeOf(pod),
  };
}

function groupSizeOf(pod: V1Pod): number | undefined {
  const value = pod.spec?.containers?.[0]?.env?.find((e) => e.name === ENV_GROUP_SIZE)?.value;
  const n = value === undefined ? Number.NaN : Number(value);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** Groups a ModelServing's pods by ServingGroup ordinal and role instance. */
export function indexPods(ms: ModelServing, pods: readonly V1Pod[]): PodIndex {
  const groups = new Map<number, ObservedGroup>();
  const stale: PodIndex['stale'] = [];
  const takenNames = new Set<string>();
  const ignored: string[] = [];
  for (const pod of pods) {
    const name = pod.metadata?.name;
    if (!name) continue;
    takenNames.add(name);
    const owner: Ownership = ownershipOf(pod.metadata, ms);
    if (owner === 'stale') {
      stale.push({ name, uid: pod.metadata?.uid ?? '', ...versionOf(pod.metadata), terminating: Boolean(pod.metadata?.deletionTimestamp) });
      continue;
    }
    const facts = owner === 'ours' ? podFacts(pod, ms.metadata.name) : undefined;
    if (!facts) {
      ignored.push(name);
      continue;
    }
    let group = groups.get(facts.ordinal);
    if (!group) {
      group = { name: facts.groupName, ordinal: facts.ordinal, roles: new Map(), pods: [] };
      groups.set(facts.ordinal, group);
    }
    group.pods.push(facts);
    let byIndex = group.roles.get(facts.roleName);
    if (!byIndex) group.roles.set(facts.roleName, (byIndex = new Map()));
    let instance = byIndex.get(facts.roleIndex);
    if (!instance) {
      instance = { roleName: facts.roleName, roleId: facts.roleId, index: facts.roleIndex, pods: [] };
      byIndex.set(facts.roleIndex, instance);
    }
    instance.pods.push(facts);
  }
  return { groups, stale, takenNames, ignored };
}
