/**
 * The working model a plan is made on: every ServingGroup and role instance, observed or about to be
 * created, with the revision and template each one belongs to. Planning steps mark objects as
 * deleting or created here, so later steps (rolling update budget, status) see the earlier decisions.
 */
import type { Role } from '../../../api/modelserving.js';
import { roleId as roleIdOf, servingGroupName } from './names.js';
import type { ObservedGroup, ObservedRoleInstance, PodFacts } from './observed.js';
import { podsPerInstance } from './pod.js';
import { roleTemplateHash, type KnownRevision } from './revision.js';
import { instanceReady } from './role-status.js';

export interface WorkInstance {
  roleName: string;
  roleId: string;
  index: number;
  pods: PodFacts[];
  /** The role as of this instance's revision; undefined when that template is unknown. */
  template: Role | undefined;
  /** Revision label for pods (re)created in this instance. */
  revision: string;
  /** RoleRollingUpdate: the instance's template differs from the spec's role. */
  outdated: boolean;
  deleting: boolean;
  createdNow: boolean;
  /** Eviction protection: disrupted and left to the evictor for now (recovery.ts EVICTION_SETTLE_MS): not refilled. */
  settling?: boolean;
}

export interface WorkGroup {
  name: string;
  ordinal: number;
  observed: boolean;
  createdNow: boolean;
  deleting: boolean;
  /** The group's effective revision: the update revision when its pods are equivalent to it. */
  revision: string;
  /** The roles the group should have (its revision's); undefined when that revision is unknown. */
  roles: Role[] | undefined;
  /** Instances by role name, then index. */
  instances: Map<string, Map<number, WorkInstance>>;
  /** Roles were scaled in this plan (group state Scaling). */
  scaled: boolean;
}

export interface RevisionContext {
  updateRevision: string;
  specRoles: Role[];
  /** Revision labels equivalent to the update revision. */
  equivalent: ReadonlySet<string>;
  known: ReadonlyMap<string, KnownRevision>;
  roleRolling: boolean;
  /** `status.currentRevision` as read (the update revision when equivalent to it). */
  statusCurrent?: string | undefined;
}

/** Ripple's template hash of a pod's role, via its revision's ControllerRevision when there is one. */
export function podRoleHash(pod: PodFacts, ctx: RevisionContext): string | undefined {
  const role = pod.revision ? ctx.known.get(pod.revision)?.roles.find((r) => r.name === pod.roleName) : undefined;
  return role ? roleTemplateHash(role) : pod.roleTemplateHash;
}

function mostCommon(values: Array<string | undefined>): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) if (v !== undefined) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]?.[0];
}

/**
 * The effective revision of an observed group. ServingGroupRollingUpdate: the update revision when every
 * live pod carries an equivalent revision label. RoleRollingUpdate: when every live pod's role template
 * matches the spec's role (roles that were never touched keep their old revision label, as in Kthena).
 * Otherwise `status.currentRevision` when some old pod still carries it (stacked updates A → B → C leave
 * pods of A and B side by side; a vote between them would flip currentRevision to B as soon as an
 * instance of A is lost, and the protected instance would be rebuilt from B), else the most common
 * old revision label.
 */
export function effectiveGroupRevision(group: ObservedGroup, ctx: RevisionContext): string {
  const live = group.pods.filter((p) => !p.terminating);
  const pods = live.length ? live : group.pods;
  const specHash = new Map(ctx.specRoles.map((r) => [r.name, roleTemplateHash(r)]));
  const current = (p: PodFacts) =>
    ctx.roleRolling
      ? specHash.has(p.roleName) && podRoleHash(p, ctx) === specHash.get(p.roleName)
      : p.revision !== undefined && ctx.equivalent.has(p.revision);
  const old = pods.filter((p) => !current(p));
  if (old.length === 0) return ctx.updateRevision;
  if (ctx.statusCurrent !== undefined && old.some((p) => p.revision === ctx.statusCurrent)) return ctx.statusCurrent;
  const label = mostCommon(old.map((p) => p.revision));
  return label === undefined || ctx.equivalent.has(label) ? (mostCommon(pods.map((p) => p.revision)) ?? ctx.updateRevision) : label;
}

export function buildObservedGroup(group: ObservedGroup, ctx: RevisionContext): WorkGroup {
  const revision = effectiveGroupRevision(group, ctx);
  const roles = ctx.roleRolling || revision === ctx.updateRevision ? ctx.specRoles : ctx.known.get(revision)?.roles;
  const instances = new Map<string, Map<number, WorkInstance>>();
  for (const [roleName, byIndex] of group.roles) {
    const out = new Map<number, WorkInstance>();
    for (const [index, inst] of byIndex) out.set(index, observedInstance(inst, roleName, revision, roles, ctx));
    instances.set(roleName, out);
  }
  const deleting = group.pods.every((p) => p.terminating);
  if (deleting) for (const byIndex of instances.values()) for (const i of byIndex.values()) i.deleting = true;
  return { name: group.name, ordinal: group.ordinal, observed: true, createdNow: false, deleting, revision, roles, instances, scaled: false };
}

function observedInstance(
  inst: ObservedRoleInstance,
  roleName: string,
  groupRevision: string,
  groupRoles: Role[] | undefined,
  ctx: RevisionContext,
): WorkInstance {
  const base = {
    roleName,
    roleId: inst.roleId,
    index: inst.index,
    pods: inst.pods,
    deleting: inst.pods.every((p) => p.terminating),
    createdNow: false,
  };
  if (!ctx.roleRolling) {
    return { ...base, template: groupRoles?.find((r) => r.name === roleName), revision: groupRevision, outdated: false };
  }
  const specRole = ctx.specRoles.find((r) => r.name === roleName);
  const live = inst.pods.filter((p) => !p.terminating);
  const sample = (live.length ? live : inst.pods)[0];
  const hash = sample ? podRoleHash(sample, ctx) : undefined;
  if (specRole && hash === roleTemplateHash(specRole)) {
    return { ...base, template: specRole, revision: ctx.updateRevision, outdated: false };
  }
  // An outdated instance keeps its own template until it is replaced.
  const label = sample?.revision;
  const old = label ? ctx.known.get(label)?.roles.find((r) => r.name === roleName) : undefined;
  const template = old && roleTemplateHash(old) === hash ? old : undefined;
  return { ...base, template, revision: label ?? ctx.updateRevision, outdated: true };
}

export function newInstance(roleName: string, index: number, template: Role, revision: string, outdated: boolean): WorkInstance {
  return { roleName, roleId: roleIdOf(roleName, index), index, pods: [], template, revision, outdated, deleting: false, createdNow: true };
}

/** A group to create; at most `maxInstances` instances per role now, the role sync adds the rest later. */
export function newGroup(msName: string, ordinal: number, revision: string, roles: Role[], maxInstances = Number.POSITIVE_INFINITY): WorkGroup {
  const instances = new Map<string, Map<number, WorkInstance>>();
  for (const role of roles) {
    const byIndex = new Map<number, WorkInstance>();
    for (let i = 0; i < Math.min(role.replicas, maxInstances); i++) byIndex.set(i, newInstance(role.name, i, role, revision, false));
    instances.set(role.name, byIndex);
  }
  return {
    name: servingGroupName(msName, ordinal),
    ordinal,
    observed: false,
    createdNow: true,
    deleting: false,
    revision,
    roles,
    instances,
    scaled: false,
  };
}

export function allInstances(group: WorkGroup): WorkInstance[] {
  return [...group.instances.values()].flatMap((m) => [...m.values()]);
}

/**
 * Expected pods of an instance: from its template; when the template is unknown, from the pods'
 * `GROUP_SIZE` env var, or at least what is there.
 */
export function expectedPods(inst: WorkInstance): number {
  if (inst.template) return podsPerInstance(inst.template);
  const seen = inst.pods.reduce((n, p) => Math.max(n, p.podIndex + 1), 0);
  return Math.max(seen, ...inst.pods.map((p) => p.groupSize ?? 0));
}

/** Running: every expected pod exists, none terminating, all Running and Ready. */
export function instanceRunning(inst: WorkInstance): boolean {
  return !inst.deleting && !inst.createdNow && instanceReady(inst.pods, expectedPods(inst));
}

/**
 * A group is available when it is not deleting and, for every role of its revision, exactly
 * `replicas` instances exist and all of them are Running — and no instance of another role is left.
 */
export function groupAvailable(group: WorkGroup): boolean {
  if (group.deleting || group.createdNow) return false;
  const all = allInstances(group);
  if (!group.roles) return all.length > 0 && all.every(instanceRunning);
  for (const role of group.roles) {
    const insts = [...(group.instances.get(role.name)?.values() ?? [])];
    if (insts.length !== role.replicas || !insts.every(instanceRunning)) return false;
  }
  const names = new Set(group.roles.map((r) => r.name));
  return all.every((i) => names.has(i.roleName));
}

export function deletionCost(group: WorkGroup | WorkInstance): number {
  const pods = 'instances' in group ? allInstances(group).flatMap((i) => i.pods) : group.pods;
  return pods.reduce((n, p) => n + p.deletionCost, 0);
}
