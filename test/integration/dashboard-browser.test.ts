import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelServingRoleStatusReader } from '../../functions/reconcile-modelserving/role-status-reader.js';
import { opsApp, startOpsServer, type RunningOpsServer } from '../../ops/server.js';
import { QueueMetrics } from '../../queue/metrics.js';
import { TerminalError } from '../../base/errors.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The dashboards of a real ops server over real queues in Redis, opened in Debian's Chromium (headless,
// driven by playwright-core): what a person sees on /ui and on /admin/ui. Screenshots go to
// .cache/test-output/dashboard-browser/.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = path.join(root, '.cache', 'test-output', 'dashboard-browser');
const TOKEN = 'dashboard-token-0123456789abcdef';
const REASON = 'image pull refused: registry quota exceeded (simulated)';
const CHROMIUM = process.env.RIPPLE_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
// A stack line of a TypeScript/JavaScript file, as V8 prints them.
const STACK_LINE = /\bat .*\.[jt]s:\d+:\d+/;

const fns: FunctionDefinition[] = [
  {
    name: 'render-pages',
    triggers: [],
    concurrency: 1,
    reconcile: async (req) => {
      await new Promise((r) => setTimeout(r, 200));
      if (req.key.endsWith('/broken')) throw new TerminalError(REASON);
    },
  },
];

let sb: TestSandbox;
let host: FunctionHost;
let server: RunningOpsServer;
let base: string;
const profiles: string[] = [];
const contexts: BrowserContext[] = [];

/** A fresh headless Chromium with an empty profile of its own (--user-data-dir). */
async function browser(credentials?: { username: string; password: string }): Promise<Page> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-chromium-'));
  profiles.push(dir);
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 720 },
    ...(credentials ? { httpCredentials: credentials } : {}),
  });
  contexts.push(context);
  return context.pages()[0] ?? context.newPage();
}

const text = (page: Page) => page.locator('body').innerText();

/**
 * Reads the page until it shows what `ok` looks for. bull-board polls its API by itself; a reload
 * every 5 s only makes sure a page that rendered before the change does not wait for its interval.
 */
async function showing(page: Page, what: string, ok: (body: string) => boolean): Promise<string> {
  let last = '';
  let reads = 0;
  return waitFor(
    what,
    60_000,
    async () => {
      if (++reads % 10 === 0) await page.reload({ waitUntil: 'domcontentloaded' });
      last = await text(page).catch(() => '');
      return ok(last) ? last : false;
    },
    500,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; the page showed:\n${last}`);
  });
}

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  sb = await openSandbox('dashboard');
  const registry = new Registry();
  const log = createLogger('dashboard-test', process.env.LOG_LEVEL ?? 'error');
  host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: fns, log, metrics: new QueueMetrics(registry), namespace: sb.namespace });
  const app = opsApp({ registry, live: () => [], ready: async () => [], control: { host, token: TOKEN, roles: modelServingRoleStatusReader(host.redis, host.prefix), log } });
  server = await startOpsServer({ app, port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  for (const c of contexts.splice(0)) await c.close();
  for (const d of profiles.splice(0)) rmSync(d, { recursive: true, force: true });
  await server?.close();
  await host?.close();
  await sb?.cleanup();
});

describe('the dashboards in a real browser', () => {
  it('/ui: queue names and counts as jobs are added and processed; a failed job shows its reason and not its stack; no Redis details', async () => {
    const q = host.queue('render-pages');
    for (const key of ['shop/a', 'shop/b', 'shop/broken']) await q.add(key);

    const page = await browser();
    const first = await page.goto(`${base}/ui/queue/render-pages`);
    expect(first?.status()).toBe(200);
    expect(await page.title()).toBe('Ripple queues (read-only)');
    const waiting = await showing(page, 'three waiting jobs on /ui', (b) => /WAITING\s+3/.test(b));
    expect(waiting).toContain('Ripple function render-pages');
    await page.screenshot({ path: path.join(OUT, 'ui-waiting.png'), fullPage: true });

    host.startWorkers();
    const done = await showing(page, 'two completed and one failed job on /ui', (b) => /COMPLETED\s+2/.test(b) && /FAILED\s+1/.test(b));
    expect(done).not.toMatch(/WAITING\s+\d/); // the waiting count went away with the jobs

    await page.goto(`${base}/ui/queue/render-pages?status=failed`);
    const failed = await showing(page, 'the failed job with its reason on /ui', (b) => b.includes('shop/broken') && b.includes(REASON));
    expect(failed).toContain(REASON);
    expect(failed).toContain('stack hidden in the read-only dashboard');
    expect(failed).not.toMatch(STACK_LINE);
    expect(failed).not.toContain('UnrecoverableError');
    // Read-only: no button that would change anything.
    for (const label of [/^retry/i, /^clean/i, /^promote/i, /^pause/i]) expect(await page.getByRole('button', { name: label }).count(), String(label)).toBe(0);
    await page.screenshot({ path: path.join(OUT, 'ui-failed.png'), fullPage: true });

    // What the page's own scripts can fetch: no Redis INFO, no CLIENT LIST, no stack.
    const api = await page.evaluate(async () => {
      const get = async (p: string) => {
        const r = await fetch(p);
        return { status: r.status, body: await r.text() };
      };
      return { redis: await get('api/redis/stats'), workers: await get('api/queues/render-pages/workers'), failed: await get('api/queues?activeQueue=render-pages&status=failed&page=1&jobsPerPage=10') };
    });
    expect(api.redis.status).toBe(403);
    expect(api.redis.body).not.toMatch(/redis_version|used_memory|"version"/);
    expect(api.workers.status).toBe(403);
    expect(api.failed.status).toBe(200);
    expect(api.failed.body).toContain(REASON);
    expect(api.failed.body).not.toMatch(STACK_LINE);
    expect(api.failed.body).toMatch(/"hasWorkers":null/);
  });

  it('/admin/ui asks for the token, and with it shows the writable board with the stack and Redis details', async () => {
    // The server answers 401 with a Basic challenge: a browser asks for credentials. Headless Chromium
    // has nobody to ask, so it cancels the prompt and the navigation fails with ERR_INVALID_AUTH_CREDENTIALS.
    const challenge = async (page: Page) => {
      const answer = page.waitForResponse((r) => r.url() === `${base}/admin/ui`);
      const navigation = await page.goto(`${base}/admin/ui`).then(
        () => 'loaded',
        (err: unknown) => String(err),
      );
      const r = await answer;
      return { navigation, status: r.status(), challenge: await r.headerValue('www-authenticate') };
    };
    const anonymous = await challenge(await browser());
    expect(anonymous).toEqual({ navigation: expect.stringContaining('ERR_INVALID_AUTH_CREDENTIALS'), status: 401, challenge: 'Basic realm="ripple-ops", charset="UTF-8"' });
    // Wrong credentials: refused again (Chromium shows the 401 answer once its one try failed).
    const wrongPage = await browser({ username: 'ops', password: 'not-the-token-0123456789' });
    expect((await challenge(wrongPage)).status).toBe(401);
    expect(await text(wrongPage)).toContain('invalid token');

    const admin = await browser({ username: 'ops', password: TOKEN });
    const ok = await admin.goto(`${base}/admin/ui/queue/render-pages?status=failed`);
    expect(ok?.status()).toBe(200);
    expect(await admin.title()).toBe('Ripple queues');
    const failed = await showing(admin, 'the failed job with its stack on /admin/ui', (b) => b.includes('shop/broken') && b.includes(REASON) && STACK_LINE.test(b));
    expect(failed).toContain(REASON);
    expect(await admin.getByRole('button', { name: /retry/i }).count()).toBeGreaterThan(0);
    await admin.screenshot({ path: path.join(OUT, 'admin-failed.png'), fullPage: true });
    const redis = await admin.evaluate(async () => (await fetch('api/redis/stats')).json() as Promise<{ version?: string }>);
    expect(redis.version).toMatch(/^\d+\.\d+/);
  });
});
