/**
 * `status.roles`: each role summed over the ServingGroups, so `kubectl get -o yaml` shows which roles
 * are up without the role-status datastore (Kthena #603, #630). One entry per role, not per instance:
 * Kthena's maintainers found a list by ordinal too long for large ModelServings; the few instances
 * that are not ready are named (at most NOT_READY_LISTED).
 */
import type { Role, RoleStatusSummary } from '../../../api/modelserving.js';
import { roleTemplateHash } from './revision.js';
import type { RoleStatusSnapshot } from './role-status.js';

export const NOT_READY_LISTED = 10;

/** `<group>/<role-id>` ordered by group ordinal, then instance index (so `x-10` comes after `x-9`). */
function byOrdinals(a: string, b: string): number {
  const nums = (s: string) => (s.match(/\d+/g) ?? []).map(Number);
  const [x, y] = [nums(a), nums(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? -1) - (y[i] ?? -1);
    if (d !== 0) return d;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * From the snapshot the plan leaves (instances created by this plan are there as Creating): spec roles
 * first, in spec order, then roles only old groups still run. Instances being deleted are left out.
 */
export function roleSummaries(specRoles: readonly Role[], snapshot: RoleStatusSnapshot): RoleStatusSummary[] {
  const hashes = new Map(specRoles.map((r) => [r.name, roleTemplateHash(r)]));
  const acc = new Map<string, { replicas: number; ready: number; updated: number; notReady: string[] }>();
  for (const r of specRoles) acc.set(r.name, { replicas: 0, ready: 0, updated: 0, notReady: [] });
  const others: string[] = [];
  for (const rec of Object.values(snapshot.roles)) {
    if (rec.state === 'Deleting') continue;
    let a = acc.get(rec.roleName);
    if (!a) {
      a = { replicas: 0, ready: 0, updated: 0, notReady: [] };
      acc.set(rec.roleName, a);
      others.push(rec.roleName);
    }
    a.replicas++;
    if (rec.state === 'Running') a.ready++;
    else a.notReady.push(`${rec.group}/${rec.roleId}`);
    if (hashes.get(rec.roleName) === rec.templateHash) a.updated++;
  }
  return [...specRoles.map((r) => r.name), ...others.sort()].map((name) => {
    const a = acc.get(name) ?? { replicas: 0, ready: 0, updated: 0, notReady: [] };
    const hash = hashes.get(name);
    const notReady = a.notReady.sort(byOrdinals).slice(0, NOT_READY_LISTED);
    return {
      name,
      replicas: a.replicas,
      readyReplicas: a.ready,
      updatedReplicas: a.updated,
      ...(hash !== undefined ? { templateHash: hash } : {}),
      ...(notReady.length > 0 ? { notReady } : {}),
    };
  });
}
