/**
 * Eviction protection (kthena #1481, which neither Kthena nor any peer has): one PodDisruptionBudget per
 * ServingGroup, owned by the ModelServing, for a ModelServing annotated `ripple.dev/eviction-protection:
 * "true"`. A PDB counts pods, but a ServingGroup is one serving unit: a group with one pod evicted serves
 * nothing. So each group's PDB is either open (`maxUnavailable: 100%`: its pods may be evicted) or closed
 * (`maxUnavailable: 0`), and the plan opens only as many available groups as the rollout budget allows —
 * `available - (replicas - maxUnavailable)` — plus every group that is unavailable anyway. An eviction
 * takes its group down and the group stays open (it is unavailable), so the budget is spent: no other
 * group opens until it is back. The least recently touched groups open first: one a drain has moved comes
 * back with a new pod, so the budget passes to a group the drain still needs. A drain (the Eviction API) therefore never takes the ModelServing below
 * `replicas - maxUnavailable` available groups; a drain that would needs the groups to come back elsewhere
 * first, and `kubectl drain` retries until they have. The recovery of an evicted group waits for the drain to
 * take the rest of it (recovery.ts `EVICTION_SETTLE_MS`): replaced under the same names, its pods would be
 * what the drain's retries by name hit, on another node, once the group is back and closed.
 */
import type { ModelServing } from '../../../api/modelserving.js';
import type { ResourceRef } from '../../../kube/resources.js';
import { LABEL_GROUP_NAME, LABEL_NAME } from './names.js';
import { controllerOwnerReference } from './owner.js';

export const EVICTION_PROTECTION_ANNOTATION = 'ripple.dev/eviction-protection';

export const PDB_RESOURCE = { group: 'policy', version: 'v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', namespaced: true } as const satisfies ResourceRef;

export function evictionProtected(ms: { metadata: { annotations?: Record<string, string> | undefined } }): boolean {
  return ms.metadata.annotations?.[EVICTION_PROTECTION_ANNOTATION] === 'true';
}

/** Whether PodDisruptionBudgets must be read: opted in, or opted out by `"false"` (so the ones left are removed). */
export function readsDisruptionBudgets(ms: { metadata: { annotations?: Record<string, string> | undefined } }): boolean {
  return ms.metadata.annotations?.[EVICTION_PROTECTION_ANNOTATION] !== undefined;
}

/** What the plan reads of a PodDisruptionBudget. */
export interface DisruptionBudgetObject {
  metadata: {
    name: string;
    uid?: string | undefined;
    resourceVersion?: string | undefined;
    ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean | undefined }> | undefined;
  };
  spec?: { maxUnavailable?: number | string | undefined } | undefined;
}

export interface BudgetGroup {
  name: string;
  ordinal: number;
  available: boolean;
  /** Creation time of its newest pod (ms): a group a drain has touched has a young pod. */
  newestPod: number;
}

const OPEN = '100%';
const CLOSED = 0;

/**
 * The groups whose PDB is open: every unavailable one, and `budget` available ones — the least recently
 * touched first (whose newest pod is oldest: a group a drain has moved, even partly, has a young pod, so
 * the next one it needs opens), then the highest ordinal.
 */
export function openGroups(groups: readonly BudgetGroup[], minAvailable: number): Set<string> {
  const available = groups.filter((g) => g.available);
  const budget = Math.max(0, available.length - Math.max(0, minAvailable));
  const order = [...available].sort((a, b) => a.newestPod - b.newestPod || b.ordinal - a.ordinal);
  return new Set([...groups.filter((g) => !g.available).map((g) => g.name), ...order.slice(0, budget).map((g) => g.name)]);
}

/** The PodDisruptionBudget this function creates for a group: what the plan reads of one, and the rest it sends. */
export interface DesiredDisruptionBudget {
  apiVersion: 'policy/v1';
  kind: 'PodDisruptionBudget';
  metadata: DisruptionBudgetObject['metadata'] & { namespace?: string | undefined; labels: Record<string, string> };
  spec: { selector: { matchLabels: Record<string, string> }; maxUnavailable: number | string; unhealthyPodEvictionPolicy: 'AlwaysAllow' };
}

export function desiredDisruptionBudget(ms: ModelServing, group: string, open: boolean): DesiredDisruptionBudget {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: {
      name: group,
      namespace: ms.metadata.namespace,
      labels: { [LABEL_NAME]: ms.metadata.name, [LABEL_GROUP_NAME]: group },
      ownerReferences: [controllerOwnerReference(ms)],
    },
    spec: {
      selector: { matchLabels: { [LABEL_NAME]: ms.metadata.name, [LABEL_GROUP_NAME]: group } },
      maxUnavailable: open ? OPEN : CLOSED,
      // A pod that is not Ready may always go: its group is down already, and a drain must not wait on it.
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  };
}

export function isOpen(pdb: DisruptionBudgetObject): boolean {
  return pdb.spec?.maxUnavailable === OPEN;
}

export { OPEN as OPEN_BUDGET, CLOSED as CLOSED_BUDGET };
