import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { z } from 'zod';
import { redactUrl } from '../base/redact.js';

/**
 * Where Redis is, from one URL, so every process (watcher, workers, ops, HTTP functions) reads the same
 * setting the same way:
 *   redis://[user:pass@]host:port[/db]     one server (rediss:// for TLS)
 *   redis+sentinel://[pass@]h1:p1,h2:p2/<masterName>[/db]   a Sentinel-managed primary
 *   redis+cluster://[[user]:pass@]h1:p1,h2:p2               a Redis Cluster, from any of its nodes (seeds)
 *   rediss+cluster://…                                      the same over TLS
 */
export type RedisTarget =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; seeds: Array<{ host: string; port: number }>; username?: string; password?: string; tls?: boolean }
  | { kind: 'sentinel'; sentinels: Array<{ host: string; port: number }>; masterName: string; password?: string; db: number };

const hostPort = z
  .string()
  .regex(/^[^:,/]+:\d{1,5}$/, 'expected host:port')
  .transform((s) => {
    const [host, port] = s.split(':');
    return { host: host!, port: Number(port) };
  });

/**
 * A shared connection: one server (or a Sentinel-managed primary) or a Redis Cluster. BullMQ takes
 * either; Ripple's scripts name every key they touch, all under one function's hash tag (queue/keys.ts),
 * so they run on a cluster too.
 */
export type RedisClient = Redis | Cluster;

export function parseRedisUrl(url: string): RedisTarget {
  if (/^rediss?\+cluster:\/\//.test(url)) return parseClusterUrl(url);
  if (!url.startsWith('redis+sentinel://')) {
    if (!/^rediss?:\/\//.test(url)) throw new Error(`REDIS_URL must start with redis://, rediss://, redis+sentinel:// or redis[s]+cluster:// (got ${redactUrl(url)})`);
    return { kind: 'single', url };
  }
  const rest = url.slice('redis+sentinel://'.length);
  const at = rest.lastIndexOf('@');
  const password = at >= 0 ? decodeURIComponent(rest.slice(0, at).replace(/^[^:]*:/, '')) : undefined;
  const [hosts, masterName, db] = (at >= 0 ? rest.slice(at + 1) : rest).split('/');
  if (!hosts || !masterName) throw new Error(`a Sentinel REDIS_URL is redis+sentinel://host:port[,host:port…]/<masterName>[/db] (got ${redactUrl(url)})`);
  const sentinels = hosts.split(',').map((h) => {
    const parsed = hostPort.safeParse(h);
    if (!parsed.success) throw new Error(`Sentinel address "${h}" in REDIS_URL is not host:port`);
    return parsed.data;
  });
  return { kind: 'sentinel', sentinels, masterName, db: db ? Number(db) : 0, ...(password ? { password } : {}) };
}

function parseClusterUrl(url: string): RedisTarget {
  const tls = url.startsWith('rediss+');
  const rest = url.slice(url.indexOf('://') + 3).replace(/\/$/, '');
  const at = rest.lastIndexOf('@');
  const cred = at >= 0 ? rest.slice(0, at) : '';
  const hosts = at >= 0 ? rest.slice(at + 1) : rest;
  if (!hosts || hosts.includes('/')) throw new Error(`a cluster REDIS_URL is redis+cluster://host:port[,host:port…] with no database (got ${redactUrl(url)})`);
  const seeds = hosts.split(',').map((h) => {
    const parsed = hostPort.safeParse(h);
    if (!parsed.success) throw new Error(`cluster node "${h}" in REDIS_URL is not host:port`);
    return parsed.data;
  });
  const colon = cred.indexOf(':');
  const username = colon > 0 ? decodeURIComponent(cred.slice(0, colon)) : undefined;
  const password = colon >= 0 ? decodeURIComponent(cred.slice(colon + 1)) : cred ? decodeURIComponent(cred) : undefined;
  return { kind: 'cluster', seeds, ...(username ? { username } : {}), ...(password ? { password } : {}), ...(tls ? { tls } : {}) };
}

/**
 * After a failover the old primary answers writes with READONLY (a replica now) until the client finds
 * the new one: reconnect and resend the command instead of failing it, so a script run during the
 * switch is retried rather than dropped. The same for LOADING (a restarted server replaying its AOF).
 */
export function reconnectOnError(err: Error): boolean | 1 | 2 {
  return /^(READONLY|LOADING|MASTERDOWN)/.test(err.message) ? 2 : false;
}

/** A connection to the Redis that `url` names (see RedisTarget), with Ripple's failover handling. */
export function createRedis(url: string, opts: RedisOptions = {}): RedisClient {
  const target = parseRedisUrl(url);
  const common: RedisOptions = { reconnectOnError, ...opts };
  if (target.kind === 'single') return new Redis(target.url, common);
  if (target.kind === 'cluster') {
    return new Cluster(target.seeds, {
      // Per-node options (BullMQ reads maxRetriesPerRequest from here). A failed-over primary answers
      // MOVED for its slots, which the client follows after refreshing the slot map.
      redisOptions: { ...common, ...(target.username ? { username: target.username } : {}), ...(target.password ? { password: target.password } : {}), ...(target.tls ? { tls: {} } : {}) },
      // During a failover the slots' owner is briefly unknown (CLUSTERDOWN) or moving (TRYAGAIN): retry.
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
      retryDelayOnFailover: 200,
      slotsRefreshTimeout: 2_000,
    });
  }
  return new Redis({
    sentinels: target.sentinels,
    name: target.masterName,
    db: target.db,
    ...(target.password ? { password: target.password } : {}),
    // Ask the sentinels again on every reconnect, so a failover is followed without a restart. Not
    // ioredis's failoverDetector: in 5.11 (its code is unchanged in 6.0) a +switch-master that arrives while
    // the client is still asking a Sentinel for the primary shuts the client down for good ("Connection is
    // closed." on every call after), seen in test/faults/sentinel-kill.test.ts. The old primary's READONLY
    // or its connection dropping is enough to reconnect and ask again (reconnectOnError).
    sentinelRetryStrategy: (times) => Math.min(times * 200, 2_000),
    ...common,
  });
}
