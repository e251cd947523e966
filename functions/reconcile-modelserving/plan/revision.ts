/**
 * Revisions: a deterministic hash of the roles' template (what rolls pods), the per-role template
 * hash (what RoleRollingUpdate compares), and the ControllerRevision that keeps each revision's roles
 * so partition-protected ServingGroups can be rebuilt from it.
 *
 * Hashes are taken over a canonical form: keys sorted, and null, empty objects and empty arrays
 * dropped, resource quantities written canonically, and a container port's default `protocol: TCP`
 * left out. So `env: []`, `resources: {}`, `cpu: 1` versus `cpu: "1000m"`, or a port's `protocol: TCP`
 * added by the CRD's schema default, do not roll pods, and a ControllerRevision written by Kthena (Go's JSON of the
 * same roles) hashes to the same value as the spec it came from — which is how an existing Kthena
 * deployment is adopted without a rollout (see `revisionsEquivalentTo`).
 */
import type { V1ControllerRevision } from '@kubernetes/client-node';
import { z } from 'zod';
import { RoleSchema, type ModelServing, type Role } from '../../../api/modelserving.js';
import { LABEL_NAME, LABEL_REVISION, controllerRevisionName } from './names.js';
import { canonicalQuantity } from './quantity.js';
import { controllerOwnerReference } from './owner.js';

/** Fields of a role that do not change its pods: they never roll anything. */
export function withoutRolloutFields(role: Role): Omit<Role, 'replicas' | 'maxUnavailable' | 'maxSurge' | 'partition'> {
  const { replicas: _r, maxUnavailable: _m, maxSurge: _s, partition: _p, ...rest } = role;
  return rest;
}

/**
 * Hashes already taken, by the roles they were taken of. A parsed ModelServing is reused (frozen) while its
 * resourceVersion stays (read-state.ts), and a reconcile asks for the same role's hash once per pod and
 * instance: canonicalising and hashing each template again was a visible share of a converge's CPU
 * (bench/README.md, "ModelServing converge"). Keyed by identity, so a changed role is a new object.
 */
const revisionMemo = new WeakMap<readonly Role[], string>();
const roleHashMemo = new WeakMap<Role, string>();

/**
 * The revision of a set of roles: a hash of their templates, in order. A `collisionCount` above 0
 * (status.collisionCount, bumped when the name was taken by other data) is mixed in, as a
 * StatefulSet mixes its own into the ControllerRevision hash.
 */
export function revisionOf(roles: readonly Role[], collisionCount = 0): string {
  if (collisionCount > 0) return hashOf({ roles: roles.map(withoutRolloutFields), collisionCount });
  let hash = revisionMemo.get(roles);
  if (hash === undefined) revisionMemo.set(roles, (hash = hashOf(roles.map(withoutRolloutFields))));
  return hash;
}

/**
 * The update revision and the collision count it needs: starting from `status.collisionCount`, the count
 * goes up while the ControllerRevision of that name exists and records other roles or belongs to
 * someone else (`taken`). Bounded: a hash that keeps colliding 100 times is not a collision.
 */
export function updateRevisionOf(
  roles: readonly Role[],
  collisionCount: number,
  taken: (revision: string, canonical: string) => boolean,
): { revision: string; collisionCount: number } {
  const canonical = revisionOf(roles);
  let count = Math.max(0, collisionCount);
  for (let i = 0; i < 100; i++, count++) {
    const revision = revisionOf(roles, count);
    if (!taken(revision, canonical)) return { revision, collisionCount: count };
  }
  return { revision: revisionOf(roles, collisionCount), collisionCount };
}

/** The template hash of one role (label `modelserving.volcano.sh/role-template-hash`). */
export function roleTemplateHash(role: Role): string {
  let hash = roleHashMemo.get(role);
  if (hash === undefined) roleHashMemo.set(role, (hash = hashOf(withoutRolloutFields(role))));
  return hash;
}

export function hashOf(value: unknown): string {
  return safeEncode(String(fnv1a32(canonicalJson(value))));
}

/** JSON with sorted keys and without empty values; quantities under `limits`/`requests` canonical. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalize(value, undefined)) ?? 'null';
}

const QUANTITY_MAPS = new Set(['limits', 'requests', 'overhead', 'capacity']);

/**
 * A container port's `protocol: TCP` is the default the CRD's PodSpec schema writes into every stored
 * template (a list-map key must have one, api/openapi/structural.ts): a template stored without it reads
 * back with it, so it is left out of the hash and such a template keeps its revision.
 */
function withoutDefaultProtocol(port: unknown): unknown {
  if (typeof port !== 'object' || port === null || Array.isArray(port)) return port;
  const { protocol, ...rest } = port as Record<string, unknown>;
  return protocol === 'TCP' ? rest : port;
}

function canonicalize(value: unknown, parentKey: string | undefined): unknown {
  if (value === null || value === undefined) return undefined;
  if (Array.isArray(value)) {
    const items = value.map((v) => canonicalize(parentKey === 'ports' ? withoutDefaultProtocol(v) : v, undefined) ?? null);
    return items.length ? items : undefined;
  }
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const raw = (value as Record<string, unknown>)[key];
      const v = parentKey !== undefined && QUANTITY_MAPS.has(parentKey) ? canonicalQuantity(raw) : canonicalize(raw, key);
      if (v !== undefined) out[key] = v;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return value;
}

function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The alphabet Kubernetes uses for generated suffixes (no vowels, no look-alike characters). */
const ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';

function safeEncode(text: string): string {
  let out = '';
  for (const ch of text) out += ALPHANUMS[ch.charCodeAt(0) % ALPHANUMS.length];
  return out;
}

/** kubectl's annotation for why a template changed (`kubectl annotate … kubernetes.io/change-cause=…`). */
export const CHANGE_CAUSE_ANNOTATION = 'kubernetes.io/change-cause';

/**
 * The ControllerRevision recording `roles` as `revision`. Its `.revision` number orders revisions the
 * way a StatefulSet's do: one more than the highest of the ones that exist (`existing`), so the newest
 * template has the highest number (Kthena's always start at 1).
 */
export function controllerRevisionFor(
  ms: ModelServing,
  revision: string,
  roles: readonly Role[],
  existing: Iterable<{ object: V1ControllerRevision }> = [],
): V1ControllerRevision {
  let highest = 0;
  for (const k of existing) highest = Math.max(highest, k.object.revision ?? 0);
  // kubectl's change cause, as a Deployment's ReplicaSet carries it: what `ripple rollout history` shows.
  const cause = ms.metadata.annotations?.[CHANGE_CAUSE_ANNOTATION];
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name: controllerRevisionName(ms.metadata.name, revision),
      namespace: ms.metadata.namespace,
      ...(cause ? { annotations: { [CHANGE_CAUSE_ANNOTATION]: cause } } : {}),
      labels: { [LABEL_NAME]: ms.metadata.name, [LABEL_REVISION]: revision },
      ownerReferences: [controllerOwnerReference(ms)],
    },
    revision: highest + 1,
    // Kthena wraps the roles in an object (`data` must be a JSON object); kept for compatibility.
    data: { data: roles },
  };
}

export interface KnownRevision {
  /** The revision label / ControllerRevision suffix. */
  name: string;
  roles: Role[];
  /** Ripple's hash of these roles; equal to `name` for revisions Ripple wrote. */
  canonical: string;
  /** The ControllerRevision object, for ownership checks and clean-up. */
  object: V1ControllerRevision;
}

const RevisionDataSchema = z.union([z.object({ data: z.array(RoleSchema) }), z.array(RoleSchema)]);

/**
 * The roles a ControllerRevision keeps, parsed once per object read: a cached one (children-cache.ts) is the
 * same object until it changes, and its roles (frozen, shared by later reconciles) keep their hashes memoised.
 */
const revisionRoles = new WeakMap<object, Role[] | null>();
function rolesOf(cr: V1ControllerRevision): Role[] | undefined {
  const known = revisionRoles.get(cr);
  if (known !== undefined) return known ?? undefined;
  const parsed = RevisionDataSchema.safeParse(cr.data);
  const roles = parsed.success ? (Array.isArray(parsed.data) ? parsed.data : parsed.data.data) : null;
  if (roles) Object.freeze(roles);
  revisionRoles.set(cr, roles);
  return roles ?? undefined;
}

/**
 * Indexes a ModelServing's ControllerRevisions by revision. Revisions whose data does not parse as
 * roles are reported in `unreadable` and otherwise ignored.
 */
export function indexRevisions(
  msName: string,
  revisions: readonly V1ControllerRevision[],
): { byName: Map<string, KnownRevision>; unreadable: string[] } {
  const byName = new Map<string, KnownRevision>();
  const unreadable: string[] = [];
  for (const cr of revisions) {
    const labels = cr.metadata?.labels ?? {};
    if (labels[LABEL_NAME] !== msName) continue;
    const name = labels[LABEL_REVISION] ?? suffixOf(cr.metadata?.name, msName);
    if (!name) continue;
    const roles = rolesOf(cr);
    if (roles === undefined) {
      unreadable.push(cr.metadata?.name ?? name);
      continue;
    }
    byName.set(name, { name, roles, canonical: revisionOf(roles), object: cr });
  }
  return { byName, unreadable };
}

function suffixOf(name: string | undefined, msName: string): string | undefined {
  return name?.startsWith(`${msName}-`) ? name.slice(msName.length + 1) : undefined;
}

/**
 * The revision labels that mean the same pods as `updateRevision`: itself, plus any recorded
 * revision whose roles hash to it (e.g. one written by Kthena before Ripple took over).
 */
export function revisionsEquivalentTo(updateRevision: string, known: ReadonlyMap<string, KnownRevision>): Set<string> {
  const out = new Set([updateRevision]);
  for (const rev of known.values()) if (rev.canonical === updateRevision) out.add(rev.name);
  return out;
}
