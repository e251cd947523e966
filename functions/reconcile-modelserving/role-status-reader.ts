/**
 * The ops server's read-only dump of the role datastore (its `RoleStatusReader`), in the shape this
 * function writes: per ModelServing, the groups and roles with their states, decoded and typed, as
 * Kthena's `/debug/modelserving/cache` shows its in-memory store.
 */
import type { RedisClient } from '../../queue/connection.js';
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

export function modelServingRoleStatusReader(redis: RedisClient, prefix: string): RoleStatusReader {
  return {
    // A page of keys by SCAN from the token's cursor, then one pipelined HGETALL for that page only:
    // the cost of a request is bounded by its limit, never by how many ModelServings are stored.
    async list(opts = {}) {
      const base = `${prefix}:${ROLE_STATUS_KEY_PART}:`;
      const match = `${base}${opts.namespace !== undefined ? `${opts.namespace.replace(/[*?[\]\\]/g, '\\$&')}/` : ''}*`;
      const page = await scanPage(redis, { match, limit: opts.limit ?? 100, continue: opts.continue });
      // Sent together, not as one pipeline: on a Redis Cluster the keys of a page live on several nodes.
      // A key that fails to read is left out of the page, as before.
      const hashes = await Promise.all(page.keys.map((k) => redis.hgetall(k).catch(() => undefined)));
      const entries: RoleStatusEntry[] = [];
      page.keys.forEach((k, i) => {
        const hash = hashes[i];
        const objectKey = k.slice(base.length);
        const slash = objectKey.indexOf('/');
        if (slash < 0 || !hash || Object.keys(hash).length === 0) return;
        entries.push(entryOf(prefix, decodeRoleStatus(objectKey.slice(0, slash), objectKey.slice(slash + 1), hash)));
      });
      return { entries, ...(page.continue ? { continue: page.continue } : {}) };
    },
    async get(namespace, name) {
      return (await readRoleStatus(redis, prefix, namespace, name)).map((s) => entryOf(prefix, s));
    },
  };
}
