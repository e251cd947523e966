/**
 * Role status (seed 000): every role instance is Creating, Running or Deleting, and each change is an
 * Event on the ModelServing. States are derived from the pods each time; the previous snapshot (the
 * datastore's) only decides which changes are news. A missing snapshot is rebuilt silently, as Kthena
 * does at start-up, so a lost datastore never produces a burst of stale events.
 */
import type { PodFacts } from './observed.js';

export type RoleState = 'Creating' | 'Running' | 'Deleting';
export type GroupState = 'Creating' | 'Scaling' | 'Running' | 'Deleting';

export interface RoleRecord {
  group: string;
  roleName: string;
  roleId: string;
  state: RoleState;
  revision: string;
  templateHash: string;
  /**
   * Pod UID → the restart count it had when last seen Running and Ready: restarts up to that count were
   * already judged (the pod recovered), so only a newer one makes it an error pod again (Kthena keeps
   * the same memory per pod UID). Only pods that exist and restarted are kept.
   */
  restarts?: Record<string, number>;
  /**
   * Eviction protection: when the instance was first seen disrupted (pods gone or terminating, none failed),
   * epoch ms; kept until it runs again, so its recovery waits `EVICTION_SETTLE_MS` from then (recovery.ts).
   */
  disruptedSince?: number;
}

export interface GroupRecord {
  state: GroupState;
  revision: string;
}

/** What the role-status datastore holds for one ModelServing. */
export interface RoleStatusSnapshot {
  groups: Record<string, GroupRecord>;
  /** Keyed by `roleKey(group, roleId)`. */
  roles: Record<string, RoleRecord>;
}

export interface RoleTransition {
  group: string;
  roleName: string;
  roleId: string;
  from: RoleState | undefined;
  to: RoleState;
  type: 'Normal' | 'Warning';
  reason: 'RoleCreating' | 'RoleRunning' | 'RoleDeleting';
  message: string;
}

export function roleKey(group: string, roleIdValue: string): string {
  return `${group}/${roleIdValue}`;
}

/** Exactly the expected number of pods, none terminating, all Running and Ready (Kthena's test). */
export function instanceReady(pods: readonly PodFacts[], expectedPods: number): boolean {
  return pods.length === expectedPods && pods.every((p) => !p.terminating && p.runningAndReady);
}

export function roleStateOf(deleting: boolean, ready: boolean): RoleState {
  if (deleting) return 'Deleting';
  return ready ? 'Running' : 'Creating';
}

/**
 * The events for going from `previous` to `next`. `createdNow` are the keys of instances whose pods
 * this reconcile creates: they are announced as Creating even without a previous snapshot. Any other
 * instance missing from the previous snapshot is a rebuild and is recorded silently. `failedNow` are
 * instances found broken by this reconcile (see recovery.ts).
 */
export function roleTransitions(
  previous: RoleStatusSnapshot | undefined,
  next: RoleStatusSnapshot,
  createdNow: ReadonlySet<string>,
  failedNow: ReadonlySet<string> = new Set(),
): RoleTransition[] {
  const out: RoleTransition[] = [];
  const push = (rec: RoleRecord, from: RoleState | undefined, to: RoleState, type: 'Normal' | 'Warning') =>
    out.push({
      group: rec.group,
      roleName: rec.roleName,
      roleId: rec.roleId,
      from,
      to,
      type,
      reason: `Role${to}`,
      message: `Role ${rec.roleName}/${rec.roleId} in ServingGroup ${rec.group} is now ${to}`,
    });
  for (const [key, rec] of Object.entries(next.roles)) {
    const created = createdNow.has(key);
    if (!previous && !created) continue;
    const before = previous?.roles[key]?.state;
    if (created) {
      if (before === 'Creating') continue;
    } else {
      if (before === rec.state) continue;
      if (before === 'Deleting') continue; // a failed deletion rolled back: not news
      if (before === undefined && rec.state !== 'Deleting') continue; // rebuilt from pods
    }
    // Seed 000: a new role is Normal; a Running role falling back to Creating is a Warning. A Running
    // role that failed and is recreated at once still says so before it is deleted.
    if (!created && before === 'Running' && rec.state === 'Deleting' && failedNow.has(key)) {
      push(rec, before, 'Creating', 'Warning');
      push(rec, 'Creating', 'Deleting', 'Normal');
      continue;
    }
    push(rec, before, rec.state, !created && before === 'Running' && rec.state === 'Creating' ? 'Warning' : 'Normal');
  }
  return out;
}
