/**
 * The role-status datastore (seed 000, Kthena's in-memory `datastore`), in Redis so that every worker
 * shares it: one hash per ModelServing at `<prefix>:modelserving:roles:<namespace>/<name>`.
 *
 * | field | value |
 * |---|---|
 * | `uid` | the ModelServing's UID: an entry of a deleted namesake is ignored, not inherited |
 * | `seq` | bumped on every write; a write succeeds only over the seq it read (compare-and-set) |
 * | `group:<group>` | `{state, revision}` (Creating, Scaling, Running, Deleting) |
 * | `role:<group>/<roleID>` | `{group, roleName, roleId, state, revision, templateHash}` (Creating, Running, Deleting) |
 * | `outbox` | transitions persisted with the snapshot and not yet handed to emit-events |
 * | `updatedAt` | when it was written (for the ops dump) |
 *
 * The states are derived from the pods by the planner on every reconcile; the snapshot only tells it
 * what was known before (which changes are news, which Running instance lost a pod). A missing,
 * unreadable or foreign entry therefore reads as "no snapshot", and the planner rebuilds it silently:
 * nothing ever waits on this store. The snapshot and its transitions are written in one script, and
 * the transitions are emitted after it, from the outbox: a worker that dies in between leaves them
 * there and the next reconcile sends them (at least once).
 */
import type { RedisClient } from '../../queue/connection.js';
import { z } from 'zod';
import { parseJson, sortedJson } from '../../kube/json.js';
import type { RoleStatusSnapshot, RoleTransition } from './plan/role-status.js';
import { runScript } from '../../queue/run-script.js';
import { scanKeys } from '../../queue/scan.js';

export const ROLE_STATUS_KEY_PART = 'modelserving:roles';

export function roleStatusKey(prefix: string, namespace: string, name: string): string {
  return `${prefix}:${ROLE_STATUS_KEY_PART}:${namespace}/${name}`;
}

const RoleRecordSchema = z.object({
  group: z.string(),
  roleName: z.string(),
  roleId: z.string(),
  state: z.enum(['Creating', 'Running', 'Deleting']),
  revision: z.string(),
  templateHash: z.string(),
  restarts: z.record(z.string(), z.int().nonnegative()).optional(),
  disruptedSince: z.number().optional(),
});

const GroupRecordSchema = z.object({
  state: z.enum(['Creating', 'Scaling', 'Running', 'Deleting']),
  revision: z.string(),
});

const RoleTransitionSchema = z.object({
  group: z.string(),
  roleName: z.string(),
  roleId: z.string(),
  from: z.enum(['Creating', 'Running', 'Deleting']).optional(),
  to: z.enum(['Creating', 'Running', 'Deleting']),
  type: z.enum(['Normal', 'Warning']),
  reason: z.enum(['RoleCreating', 'RoleRunning', 'RoleDeleting']),
  message: z.string(),
});

/** What one hash holds, decoded. */
export interface StoredRoleStatus {
  namespace: string;
  name: string;
  uid: string | undefined;
  seq: string;
  updatedAt: string | undefined;
  snapshot: RoleStatusSnapshot;
  outbox: RoleTransition[];
}

/** Decodes a hash; fields that do not parse are dropped (never an error: the planner rebuilds them). */
export function decodeRoleStatus(namespace: string, name: string, hash: Record<string, string>): StoredRoleStatus {
  const snapshot: RoleStatusSnapshot = { groups: {}, roles: {} };
  let outbox: RoleTransition[] = [];
  for (const [field, value] of Object.entries(hash)) {
    if (field.startsWith('group:')) {
      const rec = GroupRecordSchema.safeParse(parseJson(value));
      if (rec.success) snapshot.groups[field.slice('group:'.length)] = rec.data;
    } else if (field.startsWith('role:')) {
      const rec = RoleRecordSchema.safeParse(parseJson(value));
      if (rec.success) snapshot.roles[field.slice('role:'.length)] = rec.data;
    } else if (field === 'outbox') {
      const list = z.array(RoleTransitionSchema).safeParse(parseJson(value));
      // JSON drops `from: undefined` (a role seen for the first time); the type wants it explicit.
      if (list.success) outbox = list.data.map((t) => ({ ...t, from: t.from }));
    }
  }
  return { namespace, name, uid: hash.uid, seq: hash.seq ?? '', updatedAt: hash.updatedAt, snapshot, outbox };
}

export function encodeRoleStatus(snapshot: RoleStatusSnapshot): string[] {
  const out: string[] = [];
  for (const [group, rec] of Object.entries(snapshot.groups)) out.push(`group:${group}`, JSON.stringify(rec));
  for (const [key, rec] of Object.entries(snapshot.roles)) out.push(`role:${key}`, JSON.stringify(rec));
  return out;
}

/** Order-independent equality, so an unchanged snapshot costs no write. */
export function snapshotsEqual(a: RoleStatusSnapshot | undefined, b: RoleStatusSnapshot): boolean {
  if (!a) return false;
  return sortedJson(a) === sortedJson(b);
}

// Replaces the whole hash only if nobody wrote since it was read (seq), so a worker that lost its
// lock and resumes late cannot put an older snapshot back. ARGV: expected seq, new seq, then pairs.
const REPLACE = `
local cur = redis.call('HGET', KEYS[1], 'seq') or ''
if cur ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
`;

const CLEAR_OUTBOX = `
if (redis.call('HGET', KEYS[1], 'seq') or '') ~= ARGV[1] then return 0 end
return redis.call('HDEL', KEYS[1], 'outbox')
`;

export interface RoleStore {
  /** The hash as stored (read before the ModelServing's UID is known). */
  loadRaw(): Promise<Record<string, string>>;
  /** The stored entry, as this ModelServing's: a namesake's states are dropped, its seq kept. */
  forOwner(hash: Record<string, string>, uid: string): StoredRoleStatus | undefined;
  /** loadRaw + forOwner. */
  load(uid: string): Promise<StoredRoleStatus | undefined>;
  /**
   * Writes `snapshot` with `transitions` in its outbox, over the `seq` loaded. Returns the new seq, or
   * undefined when another writer got there first (then this reconcile's news are not sent: the
   * other writer's are newer).
   */
  save(uid: string, expectedSeq: string, snapshot: RoleStatusSnapshot, transitions: readonly RoleTransition[], now: Date): Promise<string | undefined>;
  clearOutbox(seq: string): Promise<void>;
  remove(): Promise<void>;
}

export function roleStore(redis: RedisClient, prefix: string, namespace: string, name: string): RoleStore {
  const key = roleStatusKey(prefix, namespace, name);
  const forOwner = (hash: Record<string, string>, uid: string): StoredRoleStatus | undefined => {
    if (Object.keys(hash).length === 0) return undefined;
    const stored = decodeRoleStatus(namespace, name, hash);
    // A namesake's entry: keep its seq so the next save replaces it, but none of its states.
    return stored.uid === uid ? stored : { ...stored, snapshot: { groups: {}, roles: {} }, outbox: [], uid };
  };
  return {
    loadRaw: () => redis.hgetall(key),
    forOwner,
    async load(uid) {
      return forOwner(await redis.hgetall(key), uid);
    },
    async save(uid, expectedSeq, snapshot, transitions, now) {
      const seq = String((Number.parseInt(expectedSeq, 10) || 0) + 1);
      const fields = ['uid', uid, 'seq', seq, 'updatedAt', now.toISOString(), ...encodeRoleStatus(snapshot)];
      if (transitions.length) fields.push('outbox', JSON.stringify(transitions));
      const ok = await runScript(redis, REPLACE, [key], [expectedSeq, seq, ...fields]);
      return ok === 1 ? seq : undefined;
    },
    async clearOutbox(seq) {
      await runScript(redis, CLEAR_OUTBOX, [key], [seq]);
    },
    async remove() {
      await redis.del(key);
    },
  };
}

/**
 * Read-only view of the datastore for the ops server's dump and for tests: one ModelServing, a
 * namespace, or everything under `prefix`.
 */
export async function readRoleStatus(redis: RedisClient, prefix: string, namespace?: string, name?: string): Promise<StoredRoleStatus[]> {
  if (namespace !== undefined && name !== undefined) {
    const hash = await redis.hgetall(roleStatusKey(prefix, namespace, name));
    return Object.keys(hash).length ? [decodeRoleStatus(namespace, name, hash)] : [];
  }
  const base = `${prefix}:${ROLE_STATUS_KEY_PART}:`;
  const glob = `${base}${namespace !== undefined ? `${namespace.replace(/[*?[\]\\]/g, '\\$&')}/` : ''}*`;
  const keys = await scanKeys(redis, glob);
  const out: StoredRoleStatus[] = [];
  for (const k of [...keys].sort()) {
    const objectKey = k.slice(base.length);
    const slash = objectKey.indexOf('/');
    if (slash < 0) continue;
    const hash = await redis.hgetall(k);
    if (Object.keys(hash).length) out.push(decodeRoleStatus(objectKey.slice(0, slash), objectKey.slice(slash + 1), hash));
  }
  return out;
}
