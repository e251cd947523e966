import type { Cluster } from 'ioredis';
import { z } from 'zod';
import { scanTargets, type Scannable } from '../queue/scan.js';

/**
 * Where a listing stopped: the SCAN cursor of the batch it was reading and how many keys of that
 * batch (sorted) it had already returned, bound to the filter it was made for; on a Redis Cluster also
 * which primary (`n`, by address order) it was scanning. Opaque to clients.
 */
const tokenSchema = z.object({ c: z.string().regex(/^\d+$/), s: z.number().int().min(0), m: z.string(), n: z.number().int().min(0).optional() }).strict();
type PageToken = z.infer<typeof tokenSchema>;

export class BadContinueToken extends Error {}

export function encodeToken(t: PageToken): string {
  return Buffer.from(JSON.stringify(t)).toString('base64url');
}

/** The token's position, or BadContinueToken when it is not one of ours or was made for another filter. */
export function decodeToken(token: string, match: string): PageToken {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new BadContinueToken('continue: not a token this server gave out; start again without it');
  }
  const t = tokenSchema.safeParse(parsed);
  if (!t.success) throw new BadContinueToken('continue: not a token this server gave out; start again without it');
  if (t.data.m !== match) throw new BadContinueToken('continue: the token belongs to another query (namespace changed); start again without it');
  return t.data;
}

export interface ScanPageOptions {
  /** SCAN MATCH pattern. */
  match: string;
  /** At most this many keys are returned. */
  limit: number;
  continue?: string;
  /** COUNT hint per SCAN call. */
  count?: number;
  /** At most this many SCAN calls per page: the bound on one request's cost however sparse the matches are. */
  maxScans?: number;
}

/**
 * One page of keys matching a pattern, read with SCAN from where the previous page stopped. Each
 * request costs at most `maxScans` SCAN calls of `count` keys, whatever the keyspace's size; a page may
 * hold fewer than `limit` keys (even none) and still carry a `continue` token. As SCAN itself, a key
 * present the whole time is returned; one added or removed meanwhile may or may not be.
 */
export async function scanPage(redis: Scannable | Cluster, opts: ScanPageOptions): Promise<{ keys: string[]; continue?: string }> {
  // Defaults: a request walks at most 10 000 keys of the keyspace (10 SCANs of COUNT 1000, each a few
  // milliseconds of Redis time) and returns at most `limit` of them.
  const count = opts.count ?? 1000;
  const maxScans = opts.maxScans ?? 10;
  // On a cluster the primaries are scanned one after the other (a token names which); one server is node 0.
  const nodes = scanTargets(redis);
  let cursor = '0';
  let skip = 0;
  let node = 0;
  if (opts.continue) ({ c: cursor, s: skip, n: node = 0 } = decodeToken(opts.continue, opts.match));
  const token = (t: { c: string; s: number }) => encodeToken({ ...t, m: opts.match, ...(node > 0 ? { n: node } : {}) });
  const keys: string[] = [];
  for (let scans = 0; scans < maxScans && node < nodes.length; scans++) {
    const [next, raw] = await nodes[node]!.scan(cursor, 'MATCH', opts.match, 'COUNT', count);
    // Sorted, so re-reading the same cursor on the next page meets the batch in the same order.
    const batch = [...new Set(raw)].sort();
    const room = opts.limit - keys.length;
    const rest = batch.slice(skip);
    if (rest.length > room) {
      keys.push(...rest.slice(0, room));
      return { keys, continue: token({ c: cursor, s: skip + room }) };
    }
    keys.push(...rest);
    skip = 0;
    cursor = next;
    if (cursor === '0') {
      node++;
      if (node >= nodes.length) return { keys };
    }
    if (keys.length === opts.limit) break;
  }
  if (node >= nodes.length) return { keys };
  return { keys, continue: token({ c: cursor, s: 0 }) };
}
