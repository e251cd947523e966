/**
 * One reconcile of a ModelServing, as a pure function: observed state in, actions and status out.
 *
 * Steps, in Kthena's order: recovery, ServingGroup scale down and up (partition-aware), role
 * instances per group (refill missing pods, scale), rolling update within maxUnavailable, headless
 * Services, PodGroups, ControllerRevision clean-up, status. Each step records its decisions on the
 * working model so the later ones account for them. Every decision is re-derivable from the next
 * observation, so a plan cut short (a worker dying half-way) is completed by the next one.
 */
import type { V1ControllerRevision, V1Pod, V1Service } from '@kubernetes/client-node';
import { type ModelServing, type ModelServingStatus, type Role } from '../../../api/modelserving.js';
import type { Action, Blocked } from './actions.js';
import { desiredPodGroup, effectiveSchedulerName, gangEnabled, podGroupSpecDiffers, type ClusterCapabilities, type PodGroupObject } from './gang.js';
import {
  allInstances,
  buildObservedGroup,
  deletionCost,
  expectedPods,
  groupAvailable,
  instanceRunning,
  newGroup,
  newInstance,
  type RevisionContext,
  type WorkGroup,
  type WorkInstance,
} from './model.js';
import { KUBE_NAME_LIMIT, headlessServiceName, overlongNameAt, podName, roleId as roleIdOf, statusLabelSelector } from './names.js';
import { indexPods, versionOf, type PodIndex } from './observed.js';
import { ownershipOf } from './owner.js';
import { resolveMaxSurge, resolveMaxUnavailable, resolvePartition, revisionForNewGroup, roleTemplateForNewInstance } from './partition.js';
import { desiredPod } from './pod.js';
import { disruptedOnly, EVICTION_SETTLE_MS, groupLostInstance, instanceHealth, judgeFailed, recoveryFor, restartMemory } from './recovery.js';
import { controllerRevisionFor, indexRevisions, revisionsEquivalentTo, roleTemplateHash, updateRevisionOf } from './revision.js';
import { selectForReplacement, selectRoleInstancesForReplacement } from './rolling-update.js';
import { roleKey, roleStateOf, roleTransitions, type GroupState, type RoleStatusSnapshot, type RoleTransition } from './role-status.js';
import { scaleDecision, selectForScaleDown } from './scale.js';
import { desiredDisruptionBudget, evictionProtected, isOpen, openGroups, CLOSED_BUDGET, OPEN_BUDGET, type DisruptionBudgetObject } from './disruption.js';
import { desiredHeadlessService, needsHeadlessService } from './service.js';
import { planSurge } from './surge.js';
import { computeStatus } from './status.js';
import { deadlineAt, DEFAULT_PROGRESS_DEADLINE_SECONDS, progressDeadlineOf } from './status-deadline.js';
import { roleSummaries } from './status-roles.js';

export interface ObservedState {
  /** Parsed with `parseModelServing`, as read from the API server (name, namespace and uid set). */
  modelServing: ModelServing;
  /** Pods labelled `modelserving.volcano.sh/name=<ms>` in the namespace. */
  pods: readonly V1Pod[];
  /** Services labelled `modelserving.volcano.sh/name=<ms>`. */
  services: readonly V1Service[];
  /** ControllerRevisions labelled `modelserving.volcano.sh/name=<ms>`. */
  controllerRevisions: readonly V1ControllerRevision[];
  /** PodGroups labelled `modelserving.volcano.sh/name=<ms>` (only when Volcano is installed). */
  podGroups?: readonly PodGroupObject[];
  /** The role-status datastore's snapshot, when there is one. */
  roleStatus?: RoleStatusSnapshot;
  /** PodDisruptionBudgets labelled `modelserving.volcano.sh/name=<ms>`, when read (eviction protection set). */
  disruptionBudgets?: readonly DisruptionBudgetObject[];
  cluster: ClusterCapabilities;
  now: Date | number;
  options?: PlanOptions;
}

export interface PlanOptions {
  /** A pod no scheduler has looked at for this long is reported on status (default 60). */
  unscheduledAfterSeconds?: number;
  /** At most this many ServingGroups (and role instances per group) are created by one plan (default 100); the rest next time. */
  maxGroupCreatesPerPlan?: number;
}

export interface Plan {
  updateRevision: string;
  actions: Action[];
  /** Kthena's status as the plan leaves it; the handler writes it through status/write.ts, which decides whether it changed. */
  status: ModelServingStatus;
  /** The role-status datastore's next content, and the transitions to announce as Events. */
  roleStatus: RoleStatusSnapshot;
  roleTransitions: RoleTransition[];
  /** Reconcile again after this long even without events (grace periods, blocked names). */
  requeueAfterSeconds: number | undefined;
  /** Things a user should know that are not errors (missing ControllerRevisions, foreign objects). */
  warnings: string[];
  /**
   * Why the ModelServing cannot become available by itself (today: pods no scheduler picks up, e.g.
   * `schedulerName: volcano` without Volcano). Also in the Progressing/UpdateInProgress message; for
   * the status engine to turn into Ready=False.
   */
  problems: string[];
  /** Parts of the spec that cannot be made as written (names over 63 characters, names taken); the rest is reconciled. */
  blocked: Blocked[];
}

interface Ctx {
  ms: ModelServing;
  collisionCount: number;
  now: number;
  nowIso: string;
  rev: RevisionContext;
  statusCurrent: string | undefined;
  partition: number;
  schedulerName: string | undefined;
  gang: boolean;
  idx: PodIndex;
  groups: Map<number, WorkGroup>;
  /** Role instances found broken (failed or lost pods) by this reconcile. */
  failed: Set<string>;
  /** Eviction protection: role instances disrupted, and since when (RoleRecord.disruptedSince). */
  disruptedSince: Map<string, number>;
  deletes: Action[];
  creates: Action[];
  warnings: string[];
  /** Work the spec asks for that cannot be done as written, for status. */
  blocked: Blocked[];
  requeueAt: number[];
}

export function planModelServing(input: ObservedState): Plan {
  const ms = input.modelServing;
  const now = typeof input.now === 'number' ? input.now : input.now.getTime();
  const specRoles = ms.spec.template.roles;
  const { byName: known, unreadable } = indexRevisions(ms.metadata.name, input.controllerRevisions);
  // A ControllerRevision of that name recording other roles, or someone else's: a hash collision.
  const { revision: updateRevision, collisionCount } = updateRevisionOf(specRoles, ms.status?.collisionCount ?? 0, (rev, canonical) => {
    const k = known.get(rev);
    return k !== undefined && (k.canonical !== canonical || ownershipOf(k.object.metadata, ms) === 'foreign');
  });
  const equivalent = revisionsEquivalentTo(updateRevision, known);
  const roleRolling = ms.spec.rolloutStrategy?.type === 'RoleRollingUpdate';
  const rawCurrent = ms.status?.currentRevision;
  const statusCurrent = rawCurrent && equivalent.has(rawCurrent) ? updateRevision : rawCurrent;
  const ctx: Ctx = {
    ms,
    collisionCount,
    now,
    nowIso: new Date(now).toISOString(),
    rev: { updateRevision, specRoles, equivalent, known, roleRolling, statusCurrent },
    statusCurrent,
    partition: roleRolling ? 0 : resolvePartition(ms.spec.rolloutStrategy?.rollingUpdateConfiguration?.partition, ms.spec.replicas),
    schedulerName: effectiveSchedulerName(ms, input.cluster),
    gang: gangEnabled(ms, input.cluster),
    idx: indexPods(ms, input.pods),
    groups: new Map(),
    failed: new Set(),
    disruptedSince: new Map(),
    deletes: [],
    creates: [],
    warnings: unreadable.map((n) => `ControllerRevision ${n} does not hold roles and is ignored`),
    blocked: [],
    requeueAt: [],
  };

  if (ms.metadata.deletionTimestamp) {
    // Children go with the ModelServing through their owner references.
    return finish(ctx, input, [], ms.status ?? {});
  }

  for (const s of ctx.idx.stale) {
    if (!s.terminating) {
      ctx.deletes.push({ kind: 'deletePod', name: s.name, uid: s.uid, ...versionOf(s), reason: `left over from a deleted ModelServing named ${ms.metadata.name}` });
    }
    ctx.requeueAt.push(now + 1000);
  }
  for (const name of ctx.idx.ignored) ctx.warnings.push(`pod ${name} carries this ModelServing's labels but is not one of its pods; ignored`);
  for (const og of ctx.idx.groups.values()) ctx.groups.set(og.ordinal, buildObservedGroup(og, ctx.rev));

  const head: Action[] = [];
  const recorded = known.get(updateRevision);
  if (!recorded) {
    head.push({
      kind: 'createControllerRevision',
      object: controllerRevisionFor(ms, updateRevision, specRoles, known.values()),
      reason: 'record the update revision',
    });
  } else {
    // A rollback (or any return to an older template): the revision becomes the newest again, so history
    // lists it last and `rollout undo` goes back from it, as with a StatefulSet or Deployment.
    const highest = Math.max(0, ...[...known.values()].map((k) => k.object.revision ?? 0));
    const own = recorded.object.revision ?? 0;
    const rv = recorded.object.metadata?.resourceVersion;
    if (own < highest && rv && ownershipOf(recorded.object.metadata, ms) === 'ours') {
      head.push({
        kind: 'renumberControllerRevision',
        name: recorded.object.metadata?.name ?? '',
        resourceVersion: rv,
        revision: highest + 1,
        reason: `revision ${own} is the update revision again`,
      });
    }
  }

  recover(ctx, input.roleStatus);
  const maxCreates = input.options?.maxGroupCreatesPerPlan ?? 100;
  scaleGroups(ctx, maxCreates);
  syncRoles(ctx, maxCreates);
  rollingUpdate(ctx);
  return finish(ctx, input, head, undefined);
}

// ---------------------------------------------------------------------------------------------
// Deletion and creation primitives on the working model.

function deleteInstance(ctx: Ctx, group: WorkGroup, inst: WorkInstance, reason: string): void {
  if (inst.deleting) return;
  inst.deleting = true;
  for (const p of inst.pods) {
    if (!p.terminating) ctx.deletes.push({ kind: 'deletePod', name: p.name, uid: p.uid, ...versionOf(p), reason: `${reason}: ${group.name}/${inst.roleId}` });
  }
}

function deleteGroup(ctx: Ctx, group: WorkGroup, reason: string): void {
  if (group.deleting) return;
  for (const inst of allInstances(group)) deleteInstance(ctx, group, inst, reason);
  group.deleting = true;
}

function createPods(ctx: Ctx, group: WorkGroup, inst: WorkInstance, reason: string): void {
  if (!inst.template) return;
  const present = new Set(inst.pods.map((p) => p.podIndex));
  for (let i = 0; i < expectedPods(inst); i++) {
    if (present.has(i)) continue;
    const name = podName(group.name, inst.roleId, i);
    if (ctx.idx.takenNames.has(name)) {
      if (ctx.idx.ignored.includes(name)) {
        // Someone else's pod (it carries our labels, not our owner reference): it will not go away by
        // itself and its events do not come to this ModelServing, so say so and look again slowly.
        ctx.blocked.push(foreignName('pod', name, group.name));
        ctx.requeueAt.push(ctx.now + FOREIGN_RECHECK_MS);
      } else {
        // Held by a pod that is going away: try again once it is gone.
        ctx.requeueAt.push(ctx.now + 1000);
      }
      continue;
    }
    const pod = desiredPod(
      {
        ms: ctx.ms,
        groupName: group.name,
        role: inst.template,
        roleIndex: inst.index,
        revision: inst.revision,
        schedulerName: ctx.schedulerName,
        gang: ctx.gang,
      },
      i,
    );
    ctx.creates.push({ kind: 'createPod', pod, reason });
  }
}

/** How often a name held by someone else's object is looked at again (its events do not come here). */
export const FOREIGN_RECHECK_MS = 30_000;

export function foreignName(kind: 'pod' | 'Service', name: string, group: string): Blocked {
  return {
    reason: 'NameTaken',
    message: `${kind} ${name} exists and is not owned by this ModelServing, so ServingGroup ${group} cannot be completed; delete or rename that ${kind}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Steps.

function recover(ctx: Ctx, previous: RoleStatusSnapshot | undefined): void {
  const policy = ctx.ms.spec.recoveryPolicy;
  const grace = ctx.ms.spec.template.restartGracePeriodSeconds;
  for (const group of ctx.groups.values()) {
    if (group.deleting) continue;
    let recreateGroup: string | undefined;
    for (const inst of allInstances(group)) {
      if (inst.deleting) continue;
      const prevRecord = previous?.roles[roleKey(group.name, inst.roleId)];
      const prev = prevRecord?.state;
      const pods = inst.pods.map((p) => judgeFailed(p, prevRecord?.restarts));
      const health = instanceHealth(
        { roleName: inst.roleName, roleId: inst.roleId, index: inst.index, pods },
        expectedPods(inst),
        grace,
        ctx.now,
        // A disrupted instance was Running when it was disrupted: its missing pods still count once its window ends.
        prevRecord?.disruptedSince !== undefined ? 'Running' : prev,
      );
      if (health.recheckAt !== undefined) ctx.requeueAt.push(health.recheckAt);
      if (health.broken) ctx.failed.add(roleKey(group.name, inst.roleId));
      // Eviction protection: a disrupted instance is left to the evictor for a while (EVICTION_SETTLE_MS).
      const key = roleKey(group.name, inst.roleId);
      const since = evictionProtected(ctx.ms) && (disruptedOnly(health) || (!health.broken && prev !== 'Running')) ? prevRecord?.disruptedSince ?? (health.broken ? ctx.now : undefined) : undefined;
      if (since !== undefined) ctx.disruptedSince.set(key, since);
      if (since !== undefined && health.broken && ctx.now < since + EVICTION_SETTLE_MS) {
        // Neither replaced nor refilled: a pod created now under an evicted pod's name is what the drain retries.
        inst.settling = true;
        ctx.requeueAt.push(since + EVICTION_SETTLE_MS);
        continue;
      }
      const action = recoveryFor(policy, health);
      if (action.kind === 'recreateGroup') recreateGroup = health.reasons.join('; ');
      else if (action.kind === 'recreateInstance') deleteInstance(ctx, group, inst, `recreate role (${health.reasons.join('; ')})`);
      else if (action.kind === 'deletePods') {
        for (const p of action.pods) {
          ctx.deletes.push({ kind: 'deletePod', name: p.name, uid: p.uid, ...versionOf(p), reason: 'failed pod (recoveryPolicy None)' });
          p.terminating = true;
        }
      }
    }
    if (policy === 'ServingGroupRecreate' && !recreateGroup && group.roles) {
      for (const role of group.roles) {
        const insts = [...(group.instances.get(role.name)?.values() ?? [])];
        const gone = Object.values(previous?.roles ?? {}).filter(
          (r) => r.group === group.name && r.roleName === role.name && r.state === 'Running' && !insts.some((i) => i.roleId === r.roleId),
        ).length;
        const observed = insts.map((i) => ({ roleName: i.roleName, roleId: i.roleId, index: i.index, pods: i.pods }));
        if (groupLostInstance(observed, role.replicas, gone)) recreateGroup = `role ${role.name} lost an instance`;
      }
    }
    if (recreateGroup) deleteGroup(ctx, group, `recreate ServingGroup (${recreateGroup})`);
  }
}

/** ServingGroupRollingUpdate's maxSurge, resolved against the replicas (0 under RoleRollingUpdate). */
function groupSurge(ctx: Ctx): number {
  return ctx.rev.roleRolling ? 0 : resolveMaxSurge(ctx.ms.spec.rolloutStrategy?.rollingUpdateConfiguration?.maxSurge, ctx.ms.spec.replicas);
}

function scaleGroups(ctx: Ctx, maxCreates: number): void {
  const { ms } = ctx;
  const replicas = ms.spec.replicas;
  const all = [...ctx.groups.values()];
  const surge = planSurge(
    replicas,
    ctx.partition,
    groupSurge(ctx),
    all.map((g) => ({ ordinal: g.ordinal, deleting: g.deleting, available: groupAvailable(g), updated: g.revision === ctx.rev.updateRevision })),
  );
  // Surge groups stand beside the replicas: they are neither counted nor scaled down while they are kept.
  const groups = all.filter((g) => !surge.keep.has(g.ordinal));
  const held = groups.map((g) => g.ordinal);
  const decision = scaleDecision(replicas, held, groups.length, ctx.partition, maxCreates + 1);
  if (decision.remove > 0) {
    const candidates = groups.map((g) => ({ group: g, ordinal: g.ordinal, ready: groupAvailable(g), deletionCost: deletionCost(g) }));
    for (const c of selectForScaleDown(candidates, decision.remove, ctx.partition)) {
      deleteGroup(ctx, c.group, 'scale down');
    }
  }
  const toCreate = [...decision.create, ...surge.create];
  if (toCreate.length > maxCreates) ctx.requeueAt.push(ctx.now);
  for (const ordinal of toCreate.slice(0, maxCreates)) {
    const choice = revisionForNewGroup(
      ordinal,
      ctx.partition,
      { revision: ctx.rev.updateRevision, roles: ctx.rev.specRoles },
      ctx.statusCurrent,
      ctx.rev.known,
    );
    if (choice.fallback) ctx.warnings.push(choice.fallback);
    const tooLong = overlongNameAt(
      ms.metadata.name,
      ordinal,
      choice.roles.map((r) => ({ name: r.name, replicas: r.replicas, hasService: needsHeadlessService(r) })),
    );
    if (tooLong) {
      // Names grow with the ordinal, so every higher ordinal is refused too. Not a terminal error:
      // the scale subresource (an HPA) may have set replicas, and it may set them back.
      ctx.blocked.push({
        reason: 'NameTooLong',
        message:
          `spec.replicas: ServingGroups from ordinal ${ordinal} are not created because "${tooLong}" would be ${tooLong.length} characters, ` +
          `over the ${KUBE_NAME_LIMIT} Kubernetes allows for Service names and label values; keep spec.replicas at most ${ordinal} or shorten metadata.name`,
      });
      break;
    }
    const group = newGroup(ms.metadata.name, ordinal, choice.revision, choice.roles, maxCreates);
    ctx.groups.set(ordinal, group);
    const why =
      ordinal < ctx.partition
        ? `create partition-protected ServingGroup on revision ${choice.revision}`
        : ordinal >= replicas
          ? 'create surge ServingGroup (maxSurge)'
          : 'create ServingGroup';
    for (const inst of allInstances(group)) createPods(ctx, group, inst, why);
  }
}

function rolePartitionOf(ctx: Ctx, role: Role): number {
  return ctx.rev.roleRolling ? resolvePartition(role.partition, role.replicas) : 0;
}

function roleSurgeOf(ctx: Ctx, role: Role): number {
  return ctx.rev.roleRolling ? resolveMaxSurge(role.maxSurge, role.replicas) : 0;
}

function syncRoles(ctx: Ctx, maxCreates: number): void {
  for (const group of ctx.groups.values()) {
    if (group.deleting || group.createdNow) continue;
    if (!group.roles) {
      ctx.warnings.push(
        `ServingGroup ${group.name} is on revision ${group.revision}, whose ControllerRevision is missing: it is left as it is until it is replaced`,
      );
      continue;
    }
    for (const role of group.roles) {
      let byIndex = group.instances.get(role.name);
      if (!byIndex) group.instances.set(role.name, (byIndex = new Map()));
      for (const inst of byIndex.values()) {
        if (!inst.deleting && !inst.settling) createPods(ctx, group, inst, 'recreate missing pod');
      }
      const partition = rolePartitionOf(ctx, role);
      const surge = planSurge(
        role.replicas,
        partition,
        roleSurgeOf(ctx, role),
        [...byIndex.values()].map((i) => ({ ordinal: i.index, deleting: i.deleting, available: instanceRunning(i), updated: !i.outdated })),
      );
      // Instances being deleted keep their index until they are gone (Kthena's rule); only live ones
      // count towards the replicas when deciding what to remove. Surge instances stand beside them.
      const liveBefore = [...byIndex.values()].filter((i) => !i.deleting && !surge.keep.has(i.index));
      const held = [...byIndex.keys()].filter((i) => !surge.keep.has(i));
      const decision = scaleDecision(role.replicas, held, liveBefore.length, partition, maxCreates + 1);
      const missing = [...decision.create, ...surge.create];
      if (missing.length > maxCreates) {
        missing.length = maxCreates;
        ctx.requeueAt.push(ctx.now);
      }
      for (const index of missing) {
        const svc = headlessServiceName(group.name, roleIdOf(role.name, index));
        if (needsHeadlessService(role) && svc.length > KUBE_NAME_LIMIT) {
          const i = ctx.rev.specRoles.findIndex((r) => r.name === role.name);
          ctx.blocked.push({
            reason: 'NameTooLong',
            message:
              `spec.template.roles[${i}].replicas: instances of role ${role.name} from index ${index} are not created because Service "${svc}" would be ` +
              `${svc.length} characters, over the ${KUBE_NAME_LIMIT} Kubernetes allows; lower the role's replicas or shorten metadata.name or the role name`,
          });
          break;
        }
        const { revision, role: template, fallback } = ctx.rev.roleRolling
          ? roleTemplateForNewInstance(index, partition, role, ctx.rev.updateRevision, ctx.statusCurrent, ctx.rev.known)
          : { revision: group.revision, role, fallback: undefined };
        if (fallback) ctx.warnings.push(fallback);
        const outdated = ctx.rev.roleRolling && roleTemplateHash(template) !== roleTemplateHash(role);
        const inst = newInstance(role.name, index, template, revision, outdated);
        byIndex.set(index, inst);
        group.scaled = true;
        createPods(ctx, group, inst, 'scale up role');
      }
      if (decision.remove > 0) {
        const candidates = liveBefore.map((i) => ({ inst: i, ordinal: i.index, ready: instanceRunning(i), deletionCost: deletionCost(i) }));
        for (const c of selectForScaleDown(candidates, decision.remove, partition)) {
          deleteInstance(ctx, group, c.inst, 'scale down role');
          group.scaled = true;
        }
      }
    }
  }
}

function rollingUpdate(ctx: Ctx): void {
  const { ms } = ctx;
  if (!ctx.rev.roleRolling) {
    const maxUnavailable = resolveMaxUnavailable(
      ms.spec.rolloutStrategy?.rollingUpdateConfiguration?.maxUnavailable ?? 1,
      ms.spec.replicas,
      groupSurge(ctx),
    );
    const all = [...ctx.groups.values()].map((g) => ({
      group: g,
      ordinal: g.ordinal,
      available: groupAvailable(g),
      deleting: g.deleting,
      replaceable: g.observed && g.ordinal >= ctx.partition && g.revision !== ctx.rev.updateRevision,
    }));
    for (const c of selectForReplacement(all, ms.spec.replicas - maxUnavailable)) deleteGroup(ctx, c.group, 'rolling update');
    return;
  }
  const specNames = new Set(ctx.rev.specRoles.map((r) => r.name));
  for (const group of ctx.groups.values()) {
    if (group.deleting || group.createdNow) continue;
    for (const role of ctx.rev.specRoles) {
      const insts = [...(group.instances.get(role.name)?.values() ?? [])];
      const partition = rolePartitionOf(ctx, role);
      const maxUnavailable =
        role.maxUnavailable === undefined ? undefined : resolveMaxUnavailable(role.maxUnavailable, role.replicas, roleSurgeOf(ctx, role));
      const candidates = insts.map((i) => ({
        inst: i,
        ordinal: i.index,
        available: instanceRunning(i),
        deleting: i.deleting,
        replaceable: i.outdated && !i.createdNow && i.index >= partition,
      }));
      for (const c of selectRoleInstancesForReplacement(candidates, role.replicas, maxUnavailable)) {
        deleteInstance(ctx, group, c.inst, 'role rolling update');
      }
    }
    for (const inst of allInstances(group)) {
      if (!specNames.has(inst.roleName)) deleteInstance(ctx, group, inst, `role ${inst.roleName} was removed from the spec`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Services, PodGroups, ControllerRevisions, status, role status.

function services(ctx: Ctx, observed: readonly V1Service[]): void {
  const desired = new Map<string, V1Service>();
  // Instances whose template is unknown (revision without ControllerRevision): keep what they have.
  const keep = new Set<string>();
  for (const group of ctx.groups.values()) {
    if (group.deleting) continue;
    for (const inst of allInstances(group)) {
      if (inst.deleting) continue;
      const name = headlessServiceName(group.name, inst.roleId);
      if (!inst.template) keep.add(name);
      else if (needsHeadlessService(inst.template)) desired.set(name, desiredHeadlessService(ctx.ms, group.name, inst.roleName, inst.index));
    }
  }
  const byName = new Map<string, V1Service>();
  for (const svc of observed) {
    const name = svc.metadata?.name;
    if (!name) continue;
    byName.set(name, svc);
    const owner = ownershipOf(svc.metadata, ctx.ms);
    if (owner === 'foreign' || svc.metadata?.deletionTimestamp) continue;
    if (owner === 'stale') {
      const reason = `left over from a deleted ModelServing named ${ctx.ms.metadata.name}`;
      ctx.deletes.push({ kind: 'deleteService', name, uid: svc.metadata?.uid ?? '', ...versionOf(svc.metadata), reason });
    } else if (!desired.has(name) && !keep.has(name)) {
      ctx.deletes.push({ kind: 'deleteService', name, uid: svc.metadata?.uid ?? '', ...versionOf(svc.metadata), reason: 'its role instance is gone' });
    }
  }
  for (const [name, svc] of desired) {
    const current = byName.get(name);
    if (!current) {
      ctx.creates.push({ kind: 'createService', service: svc, reason: 'headless Service for the workers of a role instance' });
      continue;
    }
    const owner = ownershipOf(current.metadata, ctx.ms);
    if (owner === 'foreign') {
      ctx.warnings.push(`Service ${name} exists and is not owned by this ModelServing; workers cannot reach their entry pod until it is removed`);
    } else if (owner === 'stale' || current.metadata?.deletionTimestamp) {
      ctx.requeueAt.push(ctx.now + 1000);
    }
  }
}

function podGroups(ctx: Ctx, input: ObservedState): Action[] {
  const out: Action[] = [];
  const observed = new Map((input.podGroups ?? []).filter((pg) => ownershipOf(pg.metadata, ctx.ms) === 'ours').map((pg) => [pg.metadata.name, pg]));
  const wanted = new Set<string>();
  if (ctx.gang) {
    for (const group of ctx.groups.values()) {
      if (group.deleting || !group.roles) continue;
      wanted.add(group.name);
      const desired = desiredPodGroup(ctx.ms, group.name, group.roles, input.cluster);
      const current = observed.get(group.name);
      if (!current) out.push({ kind: 'createPodGroup', podGroup: desired, reason: 'gang scheduling' });
      else if (podGroupSpecDiffers(current.spec, desired.spec)) {
        out.push({ kind: 'updatePodGroup', name: group.name, uid: current.metadata.uid ?? '', ...versionOf(current.metadata), spec: desired.spec, reason: 'gang requirements changed' });
      }
    }
  }
  for (const [name, pg] of observed) {
    const group = [...ctx.groups.values()].find((g) => g.name === name);
    if (!wanted.has(name) && (!group || group.deleting)) {
      ctx.deletes.push({ kind: 'deletePodGroup', name, uid: pg.metadata.uid ?? '', ...versionOf(pg.metadata), reason: 'ServingGroup is gone' });
    }
  }
  return out;
}

function cleanupRevisions(ctx: Ctx, currentRevision: string | undefined): Action[] {
  const keep = new Set([ctx.rev.updateRevision, currentRevision, ctx.ms.status?.currentRevision]);
  for (const g of ctx.idx.groups.values()) for (const p of g.pods) keep.add(p.revision);
  // History (what `ripple rollout undo` goes back to): revisions in use are not history; of the rest,
  // the newest `revisionHistoryLimit` (by `.revision`, as a StatefulSet counts) are kept.
  const history = [...ctx.rev.known.values()]
    .filter((rev) => !keep.has(rev.name) && ownershipOf(rev.object.metadata, ctx.ms) === 'ours')
    .sort((a, b) => (b.object.revision ?? 0) - (a.object.revision ?? 0) || (a.name < b.name ? -1 : 1));
  return history.slice(ctx.ms.spec.revisionHistoryLimit).map((rev) => ({
    kind: 'deleteControllerRevision',
    name: rev.object.metadata?.name ?? '',
    uid: rev.object.metadata?.uid ?? '',
    ...versionOf(rev.object.metadata),
    reason: `no ServingGroup uses this revision and it is beyond revisionHistoryLimit (${ctx.ms.spec.revisionHistoryLimit})`,
  }));
}

/** One PodDisruptionBudget per live ServingGroup, open or closed by the rollout budget (disruption.ts). */
function disruptionBudgets(ctx: Ctx, input: ObservedState): Action[] {
  if (!input.disruptionBudgets) return [];
  const { ms } = ctx;
  const observed = new Map(input.disruptionBudgets.filter((p) => ownershipOf(p.metadata, ms) === 'ours').map((p) => [p.metadata.name, p]));
  const live = [...ctx.groups.values()]
    .filter((g) => !g.deleting)
    .map((g) => ({
      name: g.name,
      ordinal: g.ordinal,
      available: groupAvailable(g),
      newestPod: Math.max(0, ...allInstances(g).flatMap((i) => i.pods.map((p) => p.createdAt ?? ctx.now))),
    }));
  const out: Action[] = [];
  const wanted = new Set<string>();
  if (evictionProtected(ms)) {
    const maxUnavailable = resolveMaxUnavailable(ms.spec.rolloutStrategy?.rollingUpdateConfiguration?.maxUnavailable ?? 1, ms.spec.replicas, groupSurge(ctx));
    const open = openGroups(live, ms.spec.replicas - maxUnavailable);
    for (const g of live) {
      wanted.add(g.name);
      const current = observed.get(g.name);
      const shouldOpen = open.has(g.name);
      const why = shouldOpen ? 'eviction allowed: within the rollout budget or already unavailable' : 'eviction blocked: the ModelServing is at its minimum';
      if (!current) {
        out.push({ kind: 'createDisruptionBudget', object: desiredDisruptionBudget(ms, g.name, shouldOpen), reason: why });
      } else if (isOpen(current) !== shouldOpen && current.metadata.resourceVersion) {
        out.push({ kind: 'setDisruptionBudget', name: g.name, resourceVersion: current.metadata.resourceVersion, maxUnavailable: shouldOpen ? OPEN_BUDGET : CLOSED_BUDGET, reason: why });
      }
    }
  }
  for (const [name, pdb] of observed) {
    if (!wanted.has(name)) out.push({ kind: 'deleteDisruptionBudget', name, uid: pdb.metadata.uid ?? '', ...versionOf(pdb.metadata), reason: 'its ServingGroup is gone or eviction protection is off' });
  }
  return out;
}

function unscheduledProblems(ctx: Ctx, afterSeconds: number): string[] {
  const waiting = new Map<string, number>();
  for (const g of ctx.idx.groups.values()) {
    for (const p of g.pods) {
      if (p.terminating || p.phase !== 'Pending' || p.seenByScheduler || p.createdAt === undefined) continue;
      const due = p.createdAt + afterSeconds * 1000;
      if (due > ctx.now) {
        ctx.requeueAt.push(due);
        continue;
      }
      const key = p.schedulerName ?? 'default-scheduler';
      waiting.set(key, (waiting.get(key) ?? 0) + 1);
    }
  }
  return [...waiting.entries()].map(
    ([scheduler, n]) =>
      `${n} pod(s) have waited over ${afterSeconds}s without being seen by scheduler "${scheduler}"; is it running in this cluster? (spec.schedulerName)`,
  );
}

function finish(ctx: Ctx, input: ObservedState, head: Action[], frozenStatus: ModelServingStatus | undefined): Plan {
  const { ms } = ctx;
  const previousStatus = ms.status;
  let status: ModelServingStatus;
  let tail: Action[] = [];
  let pgActions: Action[] = [];
  let problems: string[] = [];
  const { snapshot, createdNow } = roleStatusOf(ctx, input.roleStatus);
  if (frozenStatus) status = frozenStatus;
  else {
    services(ctx, input.services);
    pgActions = podGroups(ctx, input);
    problems = unscheduledProblems(ctx, input.options?.unscheduledAfterSeconds ?? 60);
    const groups = [...ctx.groups.values()].sort((a, b) => a.ordinal - b.ordinal);
    const deadline = progressDeadlineOf(ms.metadata.annotations);
    const progressDeadlineSeconds = 'seconds' in deadline ? deadline.seconds : DEFAULT_PROGRESS_DEADLINE_SECONDS;
    status = computeStatus({
      msName: ms.metadata.name,
      roles: roleSummaries(ctx.rev.specRoles, snapshot),
      progressDeadlineSeconds,
      specReplicas: ms.spec.replicas,
      groups: groups.map((g) => ({ ordinal: g.ordinal, revision: g.revision, deleting: g.deleting, available: groupAvailable(g) })),
      updateRevision: ctx.rev.updateRevision,
      partition: ctx.partition,
      protectedOrdinals: Math.min(ctx.partition, ms.spec.replicas),
      problems,
      blocked: ctx.blocked.map((b) => b.message),
      generation: ms.metadata.generation,
      previous: previousStatus,
      labelSelector: statusLabelSelector(ms.metadata.name, ctx.rev.specRoles[0]?.name),
      now: ctx.nowIso,
    });
    if (ctx.collisionCount > 0 || previousStatus?.collisionCount !== undefined) status = { ...status, collisionCount: ctx.collisionCount };
    tail = [...cleanupRevisions(ctx, status.currentRevision), ...disruptionBudgets(ctx, input)];
    // Look again when the deadline would pass, so a rollout that gets stuck says so without an event.
    const due = deadlineAt(status.lastProgressTime, progressDeadlineSeconds);
    if (due !== undefined && due > ctx.now) ctx.requeueAt.push(due);
  }

  const future = ctx.requeueAt.filter((t) => Number.isFinite(t));
  const next = future.length ? Math.min(...future) : undefined;
  return {
    updateRevision: ctx.rev.updateRevision,
    actions: [...ctx.deletes.filter(uniqueDeletes()), ...head, ...pgActions, ...ctx.creates, ...tail],
    status,
    roleStatus: snapshot,
    roleTransitions: frozenStatus ? [] : roleTransitions(input.roleStatus, snapshot, createdNow, ctx.failed),
    requeueAfterSeconds: next === undefined ? undefined : Math.max(0, Math.ceil((next - ctx.now) / 1000)),
    warnings: [...new Set(ctx.warnings)],
    problems,
    blocked: [...new Map(ctx.blocked.map((b) => [b.message, b])).values()],
  };
}

function uniqueDeletes(): (a: Action) => boolean {
  const seen = new Set<string>();
  return (a) => {
    const key = `${a.kind}/${'name' in a ? a.name : ''}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  };
}

function roleStatusOf(ctx: Ctx, previous: RoleStatusSnapshot | undefined): { snapshot: RoleStatusSnapshot; createdNow: Set<string> } {
  const snapshot: RoleStatusSnapshot = { groups: {}, roles: {} };
  const createdNow = new Set<string>();
  for (const group of ctx.groups.values()) {
    const available = groupAvailable(group);
    const prev = previous?.groups[group.name]?.state;
    const state: GroupState = group.deleting
      ? 'Deleting'
      : available
        ? 'Running'
        : group.scaled || (prev === 'Scaling' && !group.createdNow)
          ? 'Scaling'
          : 'Creating';
    snapshot.groups[group.name] = { state, revision: group.revision };
    for (const inst of allInstances(group)) {
      const key = roleKey(group.name, inst.roleId);
      if (inst.createdNow) createdNow.add(key);
      snapshot.roles[key] = {
        group: group.name,
        roleName: inst.roleName,
        roleId: inst.roleId,
        state: roleStateOf(inst.deleting, instanceRunning(inst)),
        revision: inst.revision,
        templateHash: inst.template ? roleTemplateHash(inst.template) : (inst.pods[0]?.roleTemplateHash ?? ''),
      };
      const restarts = restartMemory(inst.pods, previous?.roles[key]?.restarts);
      if (restarts) snapshot.roles[key].restarts = restarts;
      const disrupted = ctx.disruptedSince.get(key);
      if (disrupted !== undefined && !instanceRunning(inst)) snapshot.roles[key].disruptedSince = disrupted;
    }
  }
  return { snapshot, createdNow };
}
