import type { Redis } from 'ioredis';

/** One ModelServing's entry in the role datastore, as stored. */
export interface RoleStatusEntry {
  /** The object key (`namespace/name`) the entry belongs to, taken from the Redis key's tail. */
  key: string;
  redisKey: string;
  /** Redis type of the stored value (string, hash, list, set, zset). */
  type: string;
  /** The stored value, JSON-decoded where it is JSON; hash fields decoded one by one. */
  value: unknown;
}

/**
 * Read-only access to the role datastore for the ops server. The ModelServing function owns the
 * format; the ops server only shows what is there, so an implementation may return whatever shape
 * the function writes.
 */
export interface RoleStatusReader {
  list(opts?: { namespace?: string; limit?: number }): Promise<{ entries: RoleStatusEntry[]; truncated: boolean }>;
  get(namespace: string, name: string): Promise<RoleStatusEntry[]>;
}

export interface RedisRoleStatusReaderOptions {
  redis: Redis;
  prefix: string;
  /**
   * Glob (after the prefix) of the datastore's keys; the object key follows it. Default
   * `*modelserving:roles:`, which matches `modelserving:roles:` and `reconcile-modelserving:roles:`
   * alike, so the dump works whichever of the two the function settles on.
   */
  keyGlob?: string;
}

const DEFAULT_LIMIT = 500;

// SCAN MATCH treats these as pattern characters; object names cannot contain most of them, but a
// namespace query string can.
function escapeGlob(s: string): string {
  return s.replace(/[*?[\]\\]/g, (ch) => `\\${ch}`);
}

function decode(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The default reader: scans the datastore's keys in Redis and returns each value as stored. */
export function redisRoleStatusReader(opts: RedisRoleStatusReaderOptions): RoleStatusReader {
  const glob = opts.keyGlob ?? '*modelserving:roles:';
  const base = `${opts.prefix}:${glob}`;

  async function read(redisKey: string): Promise<RoleStatusEntry | undefined> {
    const type = await opts.redis.type(redisKey);
    let value: unknown;
    switch (type) {
      case 'none':
        return undefined; // expired between SCAN and read
      case 'string':
        value = decode((await opts.redis.get(redisKey)) ?? '');
        break;
      case 'hash':
        value = Object.fromEntries(Object.entries(await opts.redis.hgetall(redisKey)).map(([k, v]) => [k, decode(v)]));
        break;
      case 'list':
        value = (await opts.redis.lrange(redisKey, 0, -1)).map(decode);
        break;
      case 'set':
        value = (await opts.redis.smembers(redisKey)).map(decode);
        break;
      case 'zset':
        value = await opts.redis.zrange(redisKey, 0, -1, 'WITHSCORES');
        break;
      default:
        value = null;
    }
    const marker = redisKey.lastIndexOf(':roles:');
    return { key: marker < 0 ? redisKey : redisKey.slice(marker + ':roles:'.length), redisKey, type, value };
  }

  async function scan(match: string, limit: number): Promise<{ entries: RoleStatusEntry[]; truncated: boolean }> {
    const keys = new Set<string>();
    let cursor = '0';
    let truncated = false;
    do {
      const [next, batch] = await opts.redis.scan(cursor, 'MATCH', match, 'COUNT', 500);
      cursor = next;
      for (const k of batch) {
        if (keys.size >= limit) {
          truncated = true;
          break;
        }
        keys.add(k);
      }
    } while (cursor !== '0' && !truncated);
    const entries: RoleStatusEntry[] = [];
    for (const k of [...keys].sort()) {
      const e = await read(k);
      if (e) entries.push(e);
    }
    return { entries, truncated };
  }

  return {
    list: ({ namespace, limit } = {}) => scan(namespace ? `${base}${escapeGlob(namespace)}/*` : `${base}*`, limit ?? DEFAULT_LIMIT),
    // The object key may be followed by a sub-key (`ns/name:<group>`), so match both forms.
    get: async (namespace, name) => {
      const exact = `${escapeGlob(namespace)}/${escapeGlob(name)}`;
      const [a, b] = await Promise.all([scan(`${base}${exact}`, DEFAULT_LIMIT), scan(`${base}${exact}:*`, DEFAULT_LIMIT)]);
      return [...a.entries, ...b.entries];
    },
  };
}
