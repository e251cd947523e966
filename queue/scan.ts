import { Cluster } from 'ioredis';
import type { RedisClient } from './connection.js';

/** What a key scan needs of a connection: SCAN (a test may give a stand-in). */
export type Scannable = Pick<RedisClient, 'scan'>;

/**
 * The servers to SCAN to see every key: on a Redis Cluster each primary (SCAN on the cluster client
 * reads one node only), in address order so a paged scan walks them in the same order every page; on
 * one server (or a Sentinel-managed primary) the connection itself.
 */
export function scanTargets(redis: Scannable | Cluster): Scannable[] {
  if (!(redis instanceof Cluster)) return [redis];
  const address = (n: { options: { host?: string; port?: number } }) => `${n.options.host ?? ''}:${String(n.options.port ?? 0).padStart(5, '0')}`;
  return redis.nodes('master').sort((a, b) => address(a).localeCompare(address(b)));
}

/** Every key matching `match` on every primary (each once), by SCAN with `count` keys per call. */
export async function scanKeys(redis: Scannable | Cluster, match: string, count = 500): Promise<string[]> {
  const found = new Set<string>();
  for (const node of scanTargets(redis)) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', match, 'COUNT', count);
      cursor = next;
      for (const k of batch) found.add(k);
    } while (cursor !== '0');
  }
  return [...found];
}
