/**
 * The ops server's read-only dump of the role datastore (its `RoleStatusReader`), in the shape this
 * function writes: per ModelServing, the groups and roles with their states, decoded and typed, as
 * Kthena's `/debug/modelserving/cache` shows its in-memory store.
 */
import type { Redis } from 'ioredis';
import type { RoleStatusEntry, RoleStatusReader } from '../../ops/role-status.js';
import { scanPage } from '../../ops/scan-page.js';
import { decodeRoleStatus, readRoleStatus, ROLE_STATUS_KEY_PART, roleStatusKey, type StoredRoleStatus } from './role-store.js';

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
    // A page of keys by SCAN from the token's cursor, then one pipelined HGETALL for that page only:
    // the cost of a request is bounded by its limit, never by how many ModelServings are stored.
    async list(opts = {}) {
      const base = `${prefix}:${ROLE_STATUS_KEY_PART}:`;
      const match = `${base}${opts.namespace !== undefined ? `${opts.namespace.replace(/[*?[\]\\]/g, '\\$&')}/` : ''}*`;
      const page = await scanPage(redis, { match, limit: opts.limit ?? 100, continue: opts.continue });
      const hashes = page.keys.length ? ((await redis.pipeline(page.keys.map((k) => ['hgetall', k])).exec()) ?? []) : [];
      const entries: RoleStatusEntry[] = [];
      page.keys.forEach((k, i) => {
        const [err, hash] = hashes[i] ?? [];
        const objectKey = k.slice(base.length);
        const slash = objectKey.indexOf('/');
        if (err || slash < 0 || !hash || typeof hash !== 'object' || Object.keys(hash).length === 0) return;
        entries.push(entryOf(prefix, decodeRoleStatus(objectKey.slice(0, slash), objectKey.slice(slash + 1), hash as Record<string, string>)));
      });
      return { entries, ...(page.continue ? { continue: page.continue } : {}) };
    },
    async get(namespace, name) {
      return (await readRoleStatus(redis, prefix, namespace, name)).map((s) => entryOf(prefix, s));
    },
  };
}
