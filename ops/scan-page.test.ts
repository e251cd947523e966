import { describe, expect, it } from 'vitest';
import { BadContinueToken, decodeToken, encodeToken, scanPage } from './scan-page.js';

// A SCAN over a fixed keyspace: cursor i returns keys [i, i+count) (as a hash table's buckets would).
function fakeScan(all: string[]) {
  const calls: string[] = [];
  return {
    calls,
    scan: (async (cursor: string, _m: 'MATCH', _p: string, _c: 'COUNT', count: number) => {
      calls.push(cursor);
      const i = Number(cursor);
      const next = i + count >= all.length ? '0' : String(i + count);
      return [next, all.slice(i, i + count)];
    }) as never,
  };
}

describe('scanPage', () => {
  it('pages through every key once, each request bounded in SCAN calls', async () => {
    const all = Array.from({ length: 23 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    const redis = fakeScan(all);
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const before = redis.calls.length;
      const page = await scanPage(redis, { match: 'k*', limit: 4, continue: token, count: 3, maxScans: 2 });
      expect(page.keys.length).toBeLessThanOrEqual(4);
      expect(redis.calls.length - before).toBeLessThanOrEqual(2);
      seen.push(...page.keys);
      token = page.continue;
      pages++;
    } while (token && pages < 50);
    expect(seen).toEqual(all);
  });

  it('a page stops short of the limit when its SCAN budget is spent, and says where to go on', async () => {
    const redis = fakeScan(['a', 'b', 'c', 'd', 'e', 'f']);
    const page = await scanPage(redis, { match: '*', limit: 100, count: 2, maxScans: 1 });
    expect(page.keys).toEqual(['a', 'b']);
    expect(page.continue).toBeDefined();
  });

  it('refuses tokens it did not make or made for another filter', () => {
    const t = encodeToken({ c: '5', s: 1, m: 'p:ns/*' });
    expect(decodeToken(t, 'p:ns/*')).toEqual({ c: '5', s: 1, m: 'p:ns/*' });
    expect(() => decodeToken(t, 'p:*')).toThrow(BadContinueToken);
    expect(() => decodeToken('not-a-token', 'p:*')).toThrow(/not a token this server gave out/);
    expect(() => decodeToken(encodeToken({ c: '1; FLUSHALL', s: 0, m: 'p:*' }), 'p:*')).toThrow(BadContinueToken);
  });
});
