import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectSources } from '../../cli/object-sources.js';
import { definition as autoscaler } from '../../functions/reconcile-autoscaler/definition.js';
import { CONTROL_LABEL, perIdKey, PROTECTION_FINALIZER_PREFIX } from '../../functions/ops-lifecycle/protocol/index.js';
import { modelServingRoleStatusReader } from '../../functions/reconcile-modelserving/role-status-reader.js';
import { kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { opsApp, startOpsServer, type RunningOpsServer } from '../../ops/server.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { createLogger } from '../../base/log.js';
import { freePort } from '../../sandbox/free-port.js';
import { condition as msCondition, createMs, modelServingFunctions, msManifest, mustGetMs, waitConverged } from '../fixtures/modelserving-fixtures.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { autoscalerEnv, createDeployment, createVA, upsertConfigMap, waitForCondition } from './autoscaler-helpers.js';
import { CTRL, SAT } from './autoscaler-loop.js';

// The object view (/objects) of a real ops server, opened in Debian's Chromium (headless, driven by
// playwright-core), over real objects on the sandbox reconciled by the real functions: a ModelServing
// with two roles, a ModelServing whose spec the function refuses, a VariantAutoscaling whose Prometheus
// cannot be reached, a Pod inside a PodOpsLifecycle operation, and a function failing transiently.
// Screenshots go to .cache/test-output/dashboard-objects/.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = path.join(root, '.cache', 'test-output', 'dashboard-objects');
const TOKEN = 'objects-token-0123456789abcdef';
const FLAKY_ERROR = 'model registry answered 503 (simulated)';
const BROKEN_MESSAGE = 'spec.template.gangPolicy.minRoleReplicas.decode: there is no role named "decode" in spec.template.roles';
const CHROMIUM = process.env.RIPPLE_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// A function of the test's own that fails transiently for one key: a real queue retries it with backoff.
const flaky: FunctionDefinition = {
  name: 'flaky-sync',
  triggers: [],
  reconcile: async (req) => {
    if (req.key.endsWith('/flaky')) throw new Error(FLAKY_ERROR);
  },
};

let sb: TestSandbox;
let ripple: RunningRipple;
let server: RunningOpsServer;
let base: string;
let prometheusUrl: string;
const profiles: string[] = [];
const contexts: BrowserContext[] = [];

async function browser(): Promise<Page> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-chromium-'));
  profiles.push(dir);
  const context = await chromium.launchPersistentContext(dir, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1400, height: 900 } });
  contexts.push(context);
  return context.pages()[0] ?? context.newPage();
}

/** The text of one table row of the page (`data-key`), once `ok` holds for it; the page refreshes by itself. */
async function row(page: Page, section: string, key: string, what: string, ok: (text: string) => boolean): Promise<string> {
  let last = '';
  return waitFor(
    what,
    60_000,
    async () => {
      const loc = page.locator(`#${section} tr[data-key="${key}"]`);
      last = (await loc.count()) ? await loc.innerText() : `(no row ${key}; section: ${await page.locator(`#${section}`).innerText().catch(() => '')})`;
      return ok(last) ? last : false;
    },
    500,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; the row showed:\n${last}`);
  });
}

const podName = 'chat-sidecar';
const OP_ID = 'upgrade-42';

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  sb = await openSandbox('dash-objects');
  // Nothing listens there: the autoscaler's queries are refused.
  prometheusUrl = `http://127.0.0.1:${await freePort()}`;
  const env = autoscalerEnv(sb, { PROMETHEUS_URL: prometheusUrl });
  await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '1h' });
  await upsertConfigMap(sb, SAT, { default: 'kvCacheThreshold: 0.80\nqueueLengthThreshold: 5\nkvSpareTrigger: 0.1\nqueueSpareTrigger: 3\nenableLimiter: false\n' });
  ripple = await startRipple(sb, modelServingFunctions([autoscaler({ ...process.env, ...env }), flaky]), { env });
  const log = createLogger('dashboard-objects-test', process.env.LOG_LEVEL ?? 'error');
  const host = ripple.host;
  const app = opsApp({
    registry: new Registry(),
    live: () => [],
    ready: async () => [],
    control: {
      host,
      token: TOKEN,
      roles: modelServingRoleStatusReader(host.redis, host.prefix),
      log,
      objects: objectSources({ kc: sb.kc, redis: host.redis, prefix: host.prefix, namespace: sb.namespace }),
    },
  });
  server = await startOpsServer({ app, port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(async () => {
  for (const c of contexts.splice(0)) await c.close();
  for (const d of profiles.splice(0)) rmSync(d, { recursive: true, force: true });
  await server?.close();
  // The protection finalizer would hold the Pod, and the namespace with it, for ever.
  if (sb) {
    await kubeRequest(sb.kc, objectPath(Resources.pod, sb.namespace, podName), { method: 'PATCH', body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' }).catch(() => undefined);
  }
  await ripple?.stop();
  await sb?.cleanup();
});

describe('the object view in a real browser', () => {
  it('shows each object in its state, the broken ones with their messages, and failed reconciles with attempt and next retry; refreshes by itself; holds no secret', async () => {
    const ns = sb.namespace;
    // A healthy ModelServing with two roles, converged by the real function on KWOK's pods.
    await createMs(sb, msManifest('chat', ns, { replicas: 1, roles: [{ name: 'prefill' }, { name: 'decode' }] }));
    await waitConverged(sb, 'chat', { podsPerGroup: 2 });

    const page = await browser();
    const first = await page.goto(`${base}/objects?namespace=${ns}`);
    expect(first?.status()).toBe(200);
    expect(await page.title()).toBe('Ripple objects (read-only)');
    const chat = await row(page, 'modelservings', `${ns}/chat`, 'chat Ready with its roles Running', (t) => t.includes('Ready') && /chat-0\s+Running/.test(t) && /decode\/decode-0\s+Running/.test(t) && /prefill\/prefill-0\s+Running/.test(t));
    expect(chat).toContain('1/1 available');

    // Broken after the page is open: the poll brings it in, without a reload.
    const brokenMs = msManifest('broken', ns, { replicas: 1, roles: [{ name: 'main' }] });
    (brokenMs.spec as { template: Record<string, unknown> }).template.gangPolicy = { minRoleReplicas: { decode: 1 } };
    await createMs(sb, brokenMs);
    await waitFor('broken reported invalid', 30_000, async () => msCondition(await mustGetMs(sb, 'broken'), 'ConfigValid')?.status === 'False');
    const broken = await row(page, 'modelservings', `${ns}/broken`, 'broken Failed with its message', (t) => t.includes('Failed') && t.includes(BROKEN_MESSAGE));
    expect(broken).toContain('ConfigValid=False');
    expect(broken).toContain('InvalidSpec');

    // A VariantAutoscaling whose Prometheus refuses connections: a cycle runs, the VA reports it.
    await createDeployment(sb, 'chat-decode', 1);
    await createVA(sb, 'chat-decode', { model: 'chat' });
    await ripple.host.resync('reconcile-autoscaler');
    await waitForCondition(sb, 'chat-decode', 'DependenciesReachable', 'False', 'PrometheusError', 30_000);
    const va = await row(page, 'variantautoscalings', `${ns}/chat-decode`, 'the VA with DependenciesReachable=False and a decision', (t) => t.includes('DependenciesReachable=False') && t.includes('PrometheusError') && t.includes('decided '));
    expect(va).toContain('Deployment/chat-decode');
    expect(va).toContain('prometheus-error');

    // A Pod inside a PodOpsLifecycle operation, held by a cooperation controller's finalizer.
    const now = `${Date.now()}000000`;
    await sb.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: {
          name: podName,
          labels: { [CONTROL_LABEL]: 'true', [perIdKey('operating', OP_ID)]: now, [perIdKey('operationType', OP_ID)]: 'update', [perIdKey('preCheck', OP_ID)]: now },
          finalizers: [`${PROTECTION_FINALIZER_PREFIX}/traffic-off`],
        },
        spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    const pod = await row(page, 'pods', `${ns}/${podName}`, 'the Pod in its operation', (t) => t.includes(OP_ID) && t.includes('update'));
    expect(pod).toContain(`${PROTECTION_FINALIZER_PREFIX}/traffic-off`);
    expect(pod).toMatch(/PreCheck|pre-check/i);

    // A reconcile failing transiently: its attempt grows and a retry is scheduled.
    await ripple.host.enqueue('flaky-sync', `${ns}/flaky`, 'test');
    const failing = await row(page, 'failures', `flaky-sync ${ns}/flaky`, 'the flaky key with its attempt and next retry', (t) => t.includes(FLAKY_ERROR) && /\t([2-9]|\d\d+)\t/.test(t));
    expect(failing).toMatch(/\d{1,2}:\d{2}:\d{2}|now/);
    const failed = await row(page, 'failures', `reconcile-modelserving ${ns}/broken`, 'the broken ModelServing among the failed reconciles', (t) => t.includes('no role named "decode"'));
    expect(failed).toContain('not retried');
    await page.screenshot({ path: path.join(OUT, 'objects.png'), fullPage: true });

    // No secret anywhere the page or its script can read: not the ops token, not the Redis URL.
    const html = await page.content();
    const answers = await page.evaluate(async () => Promise.all(['modelservings', 'variantautoscalings', 'pods', 'failures'].map(async (k) => (await fetch(`/api/objects/${k}`)).text())));
    for (const text of [html, ...answers]) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(sb.redisUrl);
      expect(text).not.toMatch(/redis(s)?:\/\//);
      expect(text).not.toContain('tokens.csv');
    }
  });

  it('pages are bounded and read-only: limit and continue, refused bad input, no writes', async () => {
    const ns = sb.namespace;
    const get = async (p: string) => {
      const r = await fetch(`${base}${p}`);
      return { status: r.status, body: (await r.json()) as { items?: Array<{ name: string }>; continue?: string; error?: string } };
    };
    const one = await get(`/api/objects/modelservings?namespace=${ns}&limit=1`);
    expect(one.status).toBe(200);
    expect(one.body.items).toHaveLength(1);
    expect(one.body.continue).toBeTruthy();
    const two = await get(`/api/objects/modelservings?namespace=${ns}&limit=1&continue=${encodeURIComponent(one.body.continue!)}`);
    expect(two.body.items?.map((i) => i.name)).not.toEqual(one.body.items?.map((i) => i.name));
    expect((await get('/api/objects/modelservings?limit=5000')).status).toBe(400);
    expect((await get(`/api/objects/modelservings?namespace=${ns}&continue=not-a-token`)).body.error).toMatch(/continue/);
    expect((await get('/api/objects/modelservings?namespace=other')).body.error).toMatch(/reconciles namespace/);
    for (const p of ['/api/objects/modelservings', '/objects']) expect((await fetch(`${base}${p}`, { method: 'POST' })).status).toBe(404);
  });
});
