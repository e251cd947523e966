import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelServingRoleStatusReader } from '../../functions/reconcile-modelserving/role-status-reader.js';
import { roleStore } from '../../functions/reconcile-modelserving/role-store.js';
import { opsApp, startOpsServer, type RunningOpsServer } from '../../ops/server.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// GET /api/roles over a real Redis holding many keys: pages with a `continue` token, and a bounded
// number of Redis commands per request (counted by Redis itself, INFO commandstats), not one SCAN of
// the whole keyspace plus one HGETALL per stored ModelServing.
let sb: TestSandbox;
let host: FunctionHost;
let server: RunningOpsServer;
let base: string;
const OBJECTS = 30;
const LIMIT = 7;

async function commandCalls(): Promise<Record<string, number>> {
  const info = await sb.redis.info('commandstats');
  const out: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

beforeAll(async () => {
  sb = await openSandbox('roles-pages');
  const log = createLogger('roles-pages-test', 'warn');
  host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: [], log });
  const app = opsApp({ registry: new Registry(), live: () => [], ready: async () => [], control: { host, token: undefined, roles: modelServingRoleStatusReader(host.redis, host.prefix), log } });
  server = await startOpsServer({ app, port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${server.port}`;
  const now = new Date();
  for (let i = 0; i < OBJECTS; i++) {
    const ns = i % 2 ? 'team-a' : 'team-b';
    await roleStore(sb.redis, sb.prefix, ns, `ms-${i}`).save(`uid-${i}`, '', { groups: { [`ms-${i}-0`]: { state: 'Running', revision: 'r1' } }, roles: {} }, [], now);
  }
  // Other keys in the same Redis, as queues and other functions keep: SCAN has to walk past them.
  const filler = sb.redis.pipeline();
  for (let i = 0; i < 5000; i++) filler.set(`${sb.prefix}:filler:${i}`, '1');
  await filler.exec();
});
afterAll(async () => {
  await server?.close();
  await host?.close();
  await sb?.cleanup();
});

describe('/api/roles pages', () => {
  it('returns every object once across pages, each request bounded in SCAN and HGETALL calls', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const before = await commandCalls();
      const url = `${base}/api/roles?limit=${LIMIT}${token ? `&continue=${encodeURIComponent(token)}` : ''}`;
      const res = await fetch(url);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { entries: Array<{ key: string }>; continue?: string; truncated: boolean };
      const after = await commandCalls();
      const delta = (cmd: string) => (after[cmd] ?? 0) - (before[cmd] ?? 0);
      expect(body.entries.length).toBeLessThanOrEqual(LIMIT);
      expect(delta('scan')).toBeLessThanOrEqual(10);
      expect(delta('hgetall')).toBeLessThanOrEqual(LIMIT);
      expect(body.truncated).toBe(body.continue !== undefined);
      seen.push(...body.entries.map((e) => e.key));
      token = body.continue;
      pages++;
    } while (token && pages < 100);
    expect(token).toBeUndefined();
    expect(seen.length).toBe(OBJECTS);
    expect(new Set(seen).size).toBe(OBJECTS);
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(OBJECTS / LIMIT));
  });

  it('a namespace filter pages through that namespace only; a token is refused elsewhere or when forged', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let first: string | undefined;
    do {
      const res = await fetch(`${base}/api/roles?namespace=team-a&limit=4${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
      const body = (await res.json()) as { entries: Array<{ key: string }>; continue?: string };
      seen.push(...body.entries.map((e) => e.key));
      token = body.continue;
      first ??= token;
    } while (token);
    expect(seen.length).toBe(OBJECTS / 2);
    expect(seen.every((k) => k.startsWith('team-a/'))).toBe(true);

    expect(first).toBeDefined();
    const elsewhere = await fetch(`${base}/api/roles?namespace=team-b&continue=${encodeURIComponent(first!)}`);
    expect(elsewhere.status).toBe(400);
    expect(((await elsewhere.json()) as { error: string }).error).toMatch(/another query/);
    const forged = await fetch(`${base}/api/roles?continue=not-a-token`);
    expect(forged.status).toBe(400);
    expect((await fetch(`${base}/api/roles?limit=501`)).status).toBe(400);
  });
});
