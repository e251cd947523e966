import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { livenessProblems, readinessProblems, type HealthSources } from '../../ops/health.js';
import { modelServingRoleStatusReader } from '../../functions/reconcile-modelserving/role-status-reader.js';
import { roleStore } from '../../functions/reconcile-modelserving/role-store.js';
import { opsApp, startOpsServer, type OpsControl, type RunningOpsServer } from '../../ops/server.js';
import { QueueMetrics } from '../../queue/metrics.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { Watcher } from '../../watcher/watcher.js';
import { definitions } from '../fixtures/http-functions.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The ops server over a real FunctionHost, API server and Redis: manual resync behind the token,
// the dashboards, job counts for KEDA, health and readiness, and the role datastore dump.
const log = createLogger('ops-test', process.env.LOG_LEVEL ?? 'warn');
const TOKEN = 'ops-token-for-tests-0123456789';
let sb: TestSandbox;
let host: FunctionHost;
let registry: Registry;
let base: string;
const servers: RunningOpsServer[] = [];

function control(token: string | undefined): OpsControl {
  // The reader production gives the ops server (cli/ripple.ts).
  return { host, token, roles: modelServingRoleStatusReader(host.redis, host.prefix), log };
}

async function start(app: ReturnType<typeof opsApp>): Promise<string> {
  const s = await startOpsServer({ app, port: 0, host: '127.0.0.1' });
  servers.push(s);
  return `http://127.0.0.1:${s.port}`;
}

async function call(url: string, init: RequestInit = {}): Promise<{ status: number; json: Record<string, unknown>; text: string; headers: Headers }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // HTML or plain text
  }
  return { status: res.status, json, text, headers: res.headers };
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

async function mirrored(name: string): Promise<boolean> {
  try {
    await sb.core.readNamespacedConfigMap({ namespace: sb.namespace, name: `${name}-mirror` });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  sb = await openSandbox('ops');
  registry = new Registry();
  host = new FunctionHost({
    kc: sb.kc,
    redisUrl: sb.redisUrl,
    prefix: sb.prefix,
    functions: definitions({ SLOW_MS: '3000' }),
    log,
    metrics: new QueueMetrics(registry),
    namespace: sb.namespace,
  });
  host.startWorkers(['configmap-mirror', 'slow']);
  const sources: HealthSources = { redis: host.redis, workersRunning: () => host.workersRunning(), watchDownBoundMs: 60_000, watchStallBoundMs: 600_000 };
  base = await start(opsApp({ registry, live: () => livenessProblems(sources), ready: () => readinessProblems(sources), control: control(TOKEN) }));
});
afterAll(async () => {
  for (const s of servers.splice(0)) await s.close();
  await host.close();
  await sb.cleanup();
});

describe('ops server', () => {
  it('resync: without a token 401, with it the object is reconciled; one function and everything too', async () => {
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'a' }, data: { value: 'x' } } });
    const one = `${base}/api/resync/configmap-mirror/${sb.namespace}/a`;

    const anonymous = await call(one, { method: 'POST' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await call(one, { method: 'POST', headers: bearer('not-the-token-at-all') });
    expect(wrong.status).toBe(401);
    expect(wrong.text).not.toContain(TOKEN);
    await new Promise((r) => setTimeout(r, 300));
    expect(await mirrored('a')).toBe(false); // nothing was enqueued by refused requests

    const ok = await call(one, { method: 'POST', headers: bearer(TOKEN) });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ scope: 'object', function: 'configmap-mirror', key: `${sb.namespace}/a`, action: 'add' });
    await waitFor('the object to be reconciled', 15_000, () => mirrored('a'));

    // The body form, for keys a path cannot carry (cluster-scoped objects).
    const viaBody = await call(`${base}/api/resync/configmap-mirror`, { method: 'POST', headers: { ...bearer(TOKEN), 'content-type': 'application/json' }, body: JSON.stringify({ key: `${sb.namespace}/a` }) });
    expect(viaBody.status).toBe(200);
    expect(viaBody.json.scope).toBe('object');

    // One function: every primary object in the host's namespace, listed with what happened to each.
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'b' }, data: { value: 'y' } } });
    const fn = await call(`${base}/api/resync/configmap-mirror`, { method: 'POST', headers: bearer(TOKEN) });
    expect(fn.status).toBe(200);
    const listed = (fn.json.keys as Array<{ key: string; action: string }>).map((k) => k.key);
    expect(listed).toEqual(expect.arrayContaining([`${sb.namespace}/a`, `${sb.namespace}/b`]));
    expect(fn.json.enqueued).toBe(listed.length);
    expect(fn.json.truncated).toBe(false);
    await waitFor('b to be reconciled', 15_000, () => mirrored('b'));

    const all = await call(`${base}/api/resync`, { method: 'POST', headers: bearer(TOKEN) });
    expect(all.status).toBe(200);
    const perFn = all.json.functions as Array<{ function: string; enqueued: number }>;
    expect(perFn.map((f) => f.function).sort()).toEqual(['configmap-mirror', 'slow', 'storm']);
    expect(perFn.find((f) => f.function === 'storm')?.enqueued).toBe(0); // no primary, no tick keys

    expect((await call(`${base}/api/resync/nope`, { method: 'POST', headers: bearer(TOKEN) })).status).toBe(404);
    const badKey = await call(`${base}/api/resync/configmap-mirror/Bad_NS/a`, { method: 'POST', headers: bearer(TOKEN) });
    expect(badKey.status).toBe(400);
    expect(String(badKey.json.error)).toMatch(/DNS-1123/);
    const badBody = await call(`${base}/api/resync/configmap-mirror`, { method: 'POST', headers: bearer(TOKEN), body: '{"key": 7}' });
    expect(badBody.status).toBe(400);
    const extra = await call(`${base}/api/resync/configmap-mirror`, { method: 'POST', headers: bearer(TOKEN), body: '{"keys": []}' });
    expect(extra.status).toBe(400);
  });

  it('without RIPPLE_OPS_TOKEN the state-changing routes answer 403 and say how to enable them', async () => {
    const url = await start(opsApp({ registry: new Registry(), live: () => [], ready: async () => [], control: control(undefined) }));
    for (const path of ['/api/resync', '/api/resync/configmap-mirror', `/api/resync/configmap-mirror/${sb.namespace}/a`]) {
      const res = await call(`${url}${path}`, { method: 'POST', headers: bearer(TOKEN) });
      expect(res.status, path).toBe(403);
      expect(String(res.json.error)).toMatch(/RIPPLE_OPS_TOKEN/);
    }
    expect((await call(`${url}/admin/ui`, { headers: bearer(TOKEN) })).status).toBe(403);
    expect((await call(`${url}/ui/api/queues`)).status).toBe(200); // reading stays open
  });

  it('the dashboard lists every queue, read-only without the token and writable with it', async () => {
    const page = await call(`${base}/ui/`); // redirected to /ui
    expect(page.status).toBe(200);
    expect(page.text).toContain('<base href="/ui/"');
    const assets = [...page.text.matchAll(/(?:src|href)="(static\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThan(2);
    for (const asset of assets) expect((await fetch(new URL(asset, `${base}/ui/`))).status, asset).toBe(200);

    const queues = await call(`${base}/ui/api/queues`);
    expect(queues.status).toBe(200);
    const listed = queues.json.queues as Array<{ name: string; readOnlyMode: boolean }>;
    expect(listed.map((q) => q.name).sort()).toEqual(['configmap-mirror', 'slow', 'storm']);
    expect(listed.every((q) => q.readOnlyMode)).toBe(true);

    const pause = await call(`${base}/ui/api/queues/storm/pause`, { method: 'PUT' });
    expect(pause.status).toBe(403);
    expect(await host.queue('storm').bull.isPaused()).toBe(false);

    const anonymous = await call(`${base}/admin/ui/api/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic/); // a browser prompts
    const basic = `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}`;
    const admin = await call(`${base}/admin/ui/api/queues`, { headers: { authorization: basic } });
    expect(admin.status).toBe(200);
    expect((admin.json.queues as Array<{ readOnlyMode: boolean }>).every((q) => !q.readOnlyMode)).toBe(true);
    expect((await call(`${base}/admin/ui`, { headers: bearer(TOKEN) })).status).toBe(200);
  });

  it('/metrics counts jobs per state (waiting, delayed, prioritized, active) for KEDA', async () => {
    const storm = host.queue('storm'); // no worker: jobs stay where they are put
    await storm.add('ns/now');
    await storm.add('ns/later', 60_000);
    await host.enqueue('slow', 'ns/busy', 'test'); // a worker is running it for 3 s
    await waitFor('the slow job to be active', 10_000, async () => (await host.queue('slow').bull.getActiveCount()) === 1);

    const metrics = (await call(`${base}/metrics`)).text;
    const value = (queue: string, state: string) => Number(metrics.match(new RegExp(`^bullmq_job_count\\{queue="${queue}",state="${state}"\\} (\\d+)$`, 'm'))?.[1]);
    expect(value('storm', 'waiting')).toBe(1);
    expect(value('storm', 'delayed')).toBe(1);
    expect(value('storm', 'prioritized')).toBe(0);
    expect(value('storm', 'active')).toBe(0);
    expect(value('slow', 'active')).toBe(1);
    expect(metrics).toMatch(/^workqueue_depth\{name="storm",controller="storm"\} 2$/m); // the kernel's own depth gauge

    const api = await call(`${base}/api/queues`);
    const entry = (api.json.queues as Array<{ name: string; backlog: number; counts: Record<string, number> }>).find((q) => q.name === 'storm');
    expect(entry).toMatchObject({ backlog: 2, counts: { waiting: 1, delayed: 1 } });
  });

  it('/healthz and /readyz reflect Redis, watches and workers', async () => {
    expect((await call(`${base}/healthz`)).status).toBe(200);
    expect((await call(`${base}/readyz`)).text).toBe('ok');

    // Redis that does not answer: unready within the probe timeout, never hanging, and still live.
    const dead = new Redis('redis://127.0.0.1:9', { maxRetriesPerRequest: null, lazyConnect: false, retryStrategy: () => 1000 });
    dead.on('error', () => undefined);
    try {
      const sources: HealthSources = { redis: dead, watchDownBoundMs: 60_000, watchStallBoundMs: 600_000, redisTimeoutMs: 500 };
      const url = await start(opsApp({ registry: new Registry(), live: () => livenessProblems(sources), ready: () => readinessProblems(sources) }));
      const started = Date.now();
      const ready = await call(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect((ready.json.problems as string[]).join()).toMatch(/^redis: no answer to PING within 500 ms/);
      expect(Date.now() - started).toBeLessThan(3000);
      expect((await call(`${url}/healthz`)).status).toBe(200);
    } finally {
      dead.disconnect();
    }

    // A watch that cannot sync (a resource the API server does not serve): unready; once it has been
    // down past the stall bound, not live either.
    const ghost: FunctionDefinition = {
      name: 'ghost',
      triggers: [{ resource: { group: 'ghosts.example.com', version: 'v1', kind: 'Ghost', plural: 'ghosts', namespaced: true }, map: () => [] }],
      reconcile: async () => undefined,
    };
    const watcher = new Watcher({ kc: sb.kc, functions: [ghost], enqueue: async () => undefined, isLeader: () => true, log, namespace: sb.namespace });
    watcher.start();
    try {
      const sources: HealthSources = { redis: host.redis, watcher, watchDownBoundMs: 60_000, watchStallBoundMs: 200 };
      const url = await start(opsApp({ registry: new Registry(), live: () => livenessProblems(sources), ready: () => readinessProblems(sources) }));
      const ready = await call(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect((ready.json.problems as string[]).join()).toMatch(/watch ghosts\.ghosts\.example\.com\/v1: not synced/);
      await waitFor('the watch to count as stalled', 10_000, async () => (await call(`${url}/healthz`)).status === 500);
    } finally {
      await watcher.stop();
    }

    // Workers that stopped make the process unready.
    const stopped = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: `${sb.prefix}-stopped`, functions: definitions(), log });
    stopped.startWorkers(['storm']);
    const sources: HealthSources = { workersRunning: () => stopped.workersRunning(), watchDownBoundMs: 1, watchStallBoundMs: 1 };
    expect(await readinessProblems(sources)).toEqual([]);
    await stopped.close();
    expect(await readinessProblems(sources)).toEqual(['workers: a worker is not running']);
  });

  it('dumps the role datastore read-only, as the ModelServing function stores it', async () => {
    const ns = sb.namespace;
    const now = new Date();
    const role = (group: string, roleName: string, state: 'Creating' | 'Running') => ({ group, roleName, roleId: `${roleName}-0`, state, revision: 'r1', templateHash: 'h1' });
    // Written by the function's own store, as a reconcile writes it.
    await roleStore(sb.redis, sb.prefix, ns, 'ms-a').save(
      'uid-a',
      '',
      { groups: { 'ms-a-0': { state: 'Creating', revision: 'r1' } }, roles: { 'ms-a-0/prefill-0': role('ms-a-0', 'prefill', 'Running'), 'ms-a-0/decode-0': role('ms-a-0', 'decode', 'Creating') } },
      [{ group: 'ms-a-0', roleName: 'decode', roleId: 'decode-0', from: undefined, to: 'Creating', type: 'Normal', reason: 'RoleCreating', message: 'Role decode/decode-0 in ServingGroup ms-a-0 is now Creating' }],
      now,
    );
    await roleStore(sb.redis, sb.prefix, ns, 'ms-b').save('uid-b', '', { groups: { 'ms-b-0': { state: 'Running', revision: 'r1' } }, roles: {} }, [], now);
    await roleStore(sb.redis, sb.prefix, 'other-ns', 'ms-c').save('uid-c', '', { groups: {}, roles: {} }, [], now);

    const all = await call(`${base}/api/roles`);
    expect(all.status).toBe(200);
    const entries = all.json.entries as Array<{ key: string; type: string; value: unknown }>;
    expect(entries.map((e) => e.key).sort()).toEqual([`${ns}/ms-a`, `${ns}/ms-b`, 'other-ns/ms-c'].sort());
    expect(entries.find((e) => e.key === `${ns}/ms-a`)).toMatchObject({
      type: 'hash',
      redisKey: `${sb.prefix}:modelserving:roles:${ns}/ms-a`,
      value: {
        uid: 'uid-a',
        groups: { 'ms-a-0': { state: 'Creating' } },
        roles: { 'ms-a-0/prefill-0': { state: 'Running', revision: 'r1' }, 'ms-a-0/decode-0': { state: 'Creating' } },
        // Transitions saved and not yet handed to emit-events are shown too.
        pendingEvents: [{ reason: 'RoleCreating' }],
      },
    });

    const inNs = await call(`${base}/api/roles?namespace=${ns}`);
    expect((inNs.json.entries as unknown[]).length).toBe(2);
    const limited = await call(`${base}/api/roles?limit=1`);
    expect(limited.json.truncated).toBe(true);
    const one = await call(`${base}/api/roles/${ns}/ms-b`);
    expect(one.status).toBe(200);
    expect((one.json.entries as Array<{ value: unknown }>)[0]?.value).toMatchObject({ uid: 'uid-b', groups: { 'ms-b-0': { state: 'Running' } } });
    expect((await call(`${base}/api/roles/${ns}/nothing`)).status).toBe(404);
    expect((await call(`${base}/api/roles?namespace=Not_A_Namespace`)).status).toBe(400);
    // Read-only: there is no route that writes it.
    expect((await call(`${base}/api/roles/${ns}/ms-a`, { method: 'DELETE', headers: bearer(TOKEN) })).status).toBe(404);
  });
});
