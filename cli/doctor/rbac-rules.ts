/**
 * What each of Ripple's identities may do, read from the same RBAC files the chart and the kustomize overlays
 * grant (infra/deploy/rbac, which charts/ripple/files/rbac links to, and the all-in-one account's bindings), so
 * doctor checks exactly what an install grants and there is no second list to keep in step. Reading the files is
 * the only I/O here; turning them into the requests to check is pure.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { packageRoot } from '../../runtime/package-root.js';
/** Relative to the repository (and the image's /app): where the chart's roles come from. */
export const RBAC_DIR = 'infra/deploy/rbac';
const ALL_IN_ONE = 'infra/deploy/components/all-in-one/rbac.yaml';

const ruleSchema = z.object({
  apiGroups: z.array(z.string()).default([]),
  resources: z.array(z.string()).default([]),
  verbs: z.array(z.string()),
  resourceNames: z.array(z.string()).optional(),
});
const rbacObjectSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('ServiceAccount'), metadata: z.object({ name: z.string() }) }),
  z.object({ kind: z.enum(['ClusterRole', 'Role']), metadata: z.object({ name: z.string() }), rules: z.array(ruleSchema).default([]) }),
  z.object({
    kind: z.enum(['ClusterRoleBinding', 'RoleBinding']),
    metadata: z.object({ name: z.string() }),
    roleRef: z.object({ kind: z.enum(['ClusterRole', 'Role']), name: z.string() }),
    subjects: z.array(z.object({ kind: z.string(), name: z.string() })).default([]),
  }),
]);
export type RbacObject = z.infer<typeof rbacObjectSchema> & { file: string };

export class RbacFilesMissingError extends Error {
  override readonly name = 'RbacFilesMissingError';
}

/** Every ServiceAccount, role and binding in Ripple's RBAC files (I/O: reads them from the checkout or the image). */
export function loadRippleRbac(bases: readonly string[] = [packageRoot(import.meta.url)]): RbacObject[] {
  const base = bases.find((b) => existsSync(path.join(b, RBAC_DIR)) && existsSync(path.join(b, ALL_IN_ONE)));
  if (base === undefined) throw new RbacFilesMissingError(`Ripple's RBAC files (${RBAC_DIR}, ${ALL_IN_ONE}) are not beside this installation (looked in ${bases.join(', ')})`);
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(base, dir)).sort()) {
      const rel = path.join(dir, entry);
      if (statSync(path.join(base, rel)).isDirectory()) walk(rel);
      else if (entry === 'rbac.yaml') files.push(rel);
    }
  };
  walk(RBAC_DIR);
  files.push(ALL_IN_ONE);
  return files.flatMap((file) =>
    parseAllDocuments(readFileSync(path.join(base, file), 'utf8'))
      .map((d) => d.toJS() as unknown)
      .filter((o) => o !== null && o !== undefined)
      .map((o) => ({ ...rbacObjectSchema.parse(o), file })),
  );
}

/** One request an identity must be allowed to make, as a SelfSubjectAccessReview asks it. */
export interface ResourceAccess {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  name?: string;
  /** Undefined: in every namespace (a ClusterRole bound cluster-wide). */
  namespace?: string;
}

/** The identities (ServiceAccount names) the files define; `ripple` is the all-in-one process's. */
export function identities(objects: readonly RbacObject[]): string[] {
  return objects.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name);
}

export interface RequiredAccess {
  access: ResourceAccess[];
  /** The files its roles come from, for the fix. */
  files: string[];
}

/**
 * What `identity` is granted by the files: every rule of every role bound to it, one request per verb, group,
 * resource and name. A Role's rules apply in `namespace` (Ripple's own); the watcher's Lease is named after
 * `prefix`, as the chart names it. Undefined when the files define no such identity.
 */
export function requiredAccess(objects: readonly RbacObject[], identity: string, opts: { namespace: string; prefix: string }): RequiredAccess | undefined {
  if (!identities(objects).includes(identity)) return undefined;
  const access = new Map<string, ResourceAccess>();
  const files = new Set<string>();
  for (const binding of objects) {
    if (binding.kind !== 'ClusterRoleBinding' && binding.kind !== 'RoleBinding') continue;
    if (!binding.subjects.some((s) => s.kind === 'ServiceAccount' && s.name === identity)) continue;
    const role = objects.find((o) => o.kind === binding.roleRef.kind && o.metadata.name === binding.roleRef.name);
    if (!role || (role.kind !== 'ClusterRole' && role.kind !== 'Role')) continue;
    files.add(role.file);
    const namespace = binding.kind === 'RoleBinding' ? opts.namespace : undefined;
    for (const rule of role.rules) {
      const leases = rule.resources.includes('leases') && rule.resourceNames !== undefined;
      const names = leases ? [`${opts.prefix}-watcher`] : (rule.resourceNames ?? [undefined]);
      for (const group of rule.apiGroups)
        for (const res of rule.resources)
          for (const verb of rule.verbs)
            for (const name of names) {
              const [resource = res, subresource] = res.split('/');
              const a: ResourceAccess = { verb, group, resource, ...(subresource ? { subresource } : {}), ...(name ? { name } : {}), ...(namespace ? { namespace } : {}) };
              access.set(JSON.stringify([verb, group, resource, subresource, name, namespace]), a);
            }
    }
  }
  return { access: [...access.values()], files: [...files].sort() };
}
