/**
 * The ops server's read-only dump of the role datastore (its `RoleStatusReader`), in the shape this
 * function writes: per ModelServing, the groups and roles with their states, decoded and typed, as
 * Kthena's `/debug/modelserving/cache` shows its in-memory store.
 */
import type { Redis } from 'ioredis';
import type { RoleStatusEntry, RoleStatusReader } from '../../ops/role-status.js';
import { readRoleStatus, roleStatusKey, type StoredRoleStatus } from './role-store.js';

function entryOf(prefix: string, s: StoredRoleStatus): RoleStatusEntry {
  return {
    key: `${s.namespace}/${s.name}`,
    redisKey: roleStatusKey(prefix, s.namespace, s.name),
    type: 'hash',
    value: {
      uid: s.uid,
      updatedAt: s.updatedAt,
      groups: s.snapshot.groups,
      roles: s.snapshot.roles,
      ...(s.outbox.length ? { pendingEvents: s.outbox } : {}),
    },
  };
}

export function modelServingRoleStatusReader(redis: Redis, prefix: string): RoleStatusReader {
  return {
    async list(opts = {}) {
      const all = await readRoleStatus(redis, prefix, opts.namespace);
      const limit = opts.limit ?? 500;
      return { entries: all.slice(0, limit).map((s) => entryOf(prefix, s)), truncated: all.length > limit };
    },
    async get(namespace, name) {
      return (await readRoleStatus(redis, prefix, namespace, name)).map((s) => entryOf(prefix, s));
    },
  };
}
