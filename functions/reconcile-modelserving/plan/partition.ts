/**
 * Partition revision control (seed 004), by ordinal: ServingGroups (or role instances) whose ordinal
 * is below the partition keep their revision; when missing they are recreated from the
 * CurrentRevision's template, taken from its ControllerRevision. Everything at or above the
 * partition gets the update revision. (Kthena protects the first N by list position, kthena#1797;
 * with gaps in the ordinals that protects the wrong groups.)
 */
import { resolveIntOrPercent, type IntOrString, type Role } from '../../../api/modelserving.js';
import type { KnownRevision } from './revision.js';

/** An absolute partition: percentages of `replicas` round up; unset is 0. */
export function resolvePartition(value: IntOrString | undefined, replicas: number): number {
  if (value === undefined) return 0;
  return Math.max(0, resolveIntOrPercent(value, replicas, true) ?? 0);
}

/**
 * An absolute maxUnavailable: percentages of `replicas` round down. Without a surge, a value that
 * resolves to 0 with replicas > 0 (e.g. 10% of 5) becomes 1, as a Deployment does, so a rollout can always progress;
 * Kthena's webhook rejects such specs, but the scale subresource can create them at any time.
 */
export function resolveMaxUnavailable(value: IntOrString, replicas: number, surge = 0): number {
  const n = Math.max(0, resolveIntOrPercent(value, replicas, false) ?? 1);
  // With a surge, 0 is allowed (Kthena #1626): the surge replicas are what lets the rollout progress.
  return replicas > 0 && surge === 0 ? Math.max(1, n) : n;
}

/** An absolute maxSurge (Kthena #1626): percentages of `replicas` round up; unset is 0. */
export function resolveMaxSurge(value: IntOrString | undefined, replicas: number): number {
  if (value === undefined) return 0;
  return Math.max(0, resolveIntOrPercent(value, replicas, true) ?? 0);
}

export interface RevisionChoice {
  revision: string;
  roles: Role[];
  /**
   * Set when the protected revision's ControllerRevision is missing: the current spec is used and
   * labelled as the update revision (so labels never claim a template the pods do not have).
   */
  fallback?: string;
}

/**
 * The revision and roles for a ServingGroup created at `ordinal`: below the partition, the
 * CurrentRevision (from status; the update revision when there is none yet); otherwise the update
 * revision with the spec's roles.
 */
export function revisionForNewGroup(
  ordinal: number,
  partition: number,
  update: { revision: string; roles: Role[] },
  currentRevision: string | undefined,
  known: ReadonlyMap<string, KnownRevision>,
): RevisionChoice {
  if (ordinal >= partition || !currentRevision || currentRevision === update.revision) {
    return { revision: update.revision, roles: update.roles };
  }
  const recorded = known.get(currentRevision);
  if (recorded) return { revision: currentRevision, roles: recorded.roles };
  return {
    revision: update.revision,
    roles: update.roles,
    fallback: `ControllerRevision of current revision ${currentRevision} not found; ordinal ${ordinal} is recreated from the current spec`,
  };
}

/**
 * The template of a new role instance at `index` under RoleRollingUpdate: below the role's partition,
 * that role as of the CurrentRevision; otherwise the spec's role.
 */
export function roleTemplateForNewInstance(
  index: number,
  rolePartition: number,
  specRole: Role,
  update: string,
  currentRevision: string | undefined,
  known: ReadonlyMap<string, KnownRevision>,
): { revision: string; role: Role; fallback?: string } {
  if (index >= rolePartition || !currentRevision || currentRevision === update) return { revision: update, role: specRole };
  const old = known.get(currentRevision)?.roles.find((r) => r.name === specRole.name);
  if (old) return { revision: currentRevision, role: old };
  return {
    revision: update,
    role: specRole,
    fallback: `role ${specRole.name} not found in ControllerRevision of current revision ${currentRevision}; index ${index} is created from the current spec`,
  };
}
