import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { WorkQueue } from '../../queue/work-queue.js';
import { startCli, stopCli, type RunningCli } from '../fixtures/http-cli.js';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { TcpProxy } from '../harness/tcp-proxy.js';

// The alert rules (infra/alerts): promtool checks and unit-tests them, the PrometheusRule holds the same
// groups, and a real Prometheus loading them sees alerts fire from a real `ripple all`'s /metrics.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RULES = path.join(root, 'infra/alerts/ripple-rules.yaml');
const RULES_TEST = path.join(root, 'infra/alerts/ripple-rules.test.yaml');
const PROMETHEUS_RULE = path.join(root, 'infra/alerts/prometheusrule.yaml');

const rulesSchema = z.object({
  groups: z.array(z.object({ name: z.string(), rules: z.array(z.object({ alert: z.string().optional(), record: z.string().optional(), for: z.string().optional() }).passthrough()) })),
});
const alertsSchema = z.object({ data: z.object({ alerts: z.array(z.object({ labels: z.record(z.string(), z.string()), state: z.string(), value: z.string().optional() })) }) });

function promtool(args: string[]): { status: number | null; out: string } {
  const r = spawnSync('promtool', args, { cwd: path.dirname(RULES), encoding: 'utf8' });
  if (r.error) throw new Error(`promtool could not run (Debian's prometheus package ships it; scripts/ensure-deps.sh installs it): ${r.error.message}`);
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('alert rules: promtool', () => {
  it('promtool check rules accepts the rules file', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect(r.out).toMatch(/SUCCESS: 12 rules found/);
    expect(r.status).toBe(0);
  });

  it('promtool test rules: every alert fires when it should and not before', () => {
    const r = promtool(['test', 'rules', RULES_TEST]);
    expect(r.out).toMatch(/SUCCESS/);
    expect(r.status).toBe(0);
  });

  it('the PrometheusRule holds exactly the groups of the rules file', () => {
    const plain = rulesSchema.parse(parse(readFileSync(RULES, 'utf8')));
    const manifest = z.object({ apiVersion: z.literal('monitoring.coreos.com/v1'), kind: z.literal('PrometheusRule'), spec: rulesSchema }).parse(parse(readFileSync(PROMETHEUS_RULE, 'utf8')));
    expect(manifest.spec.groups).toEqual(plain.groups);
    const alerts = plain.groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : [])));
    expect(alerts.sort()).toEqual(['RippleLeaderLost', 'RippleObjectDegraded', 'RippleObjectFailed', 'RippleQueueNotDraining', 'RippleReconcileErrors', 'RippleRedisUnreachable', 'RippleWatchDown']);
  });

  it("every alert's runbook_url points at its own section of docs/runbooks.md", () => {
    const plain = rulesSchema.parse(parse(readFileSync(RULES, 'utf8')));
    // GitHub's anchors: the heading lower-cased.
    const anchors = new Set([...readFileSync(path.join(root, 'docs/runbooks.md'), 'utf8').matchAll(/^## (\w+)$/gm)].map((m) => m[1]!.toLowerCase()));
    const alerts = plain.groups.flatMap((g) => g.rules.filter((r) => r.alert));
    expect(alerts.length).toBe(7);
    for (const r of alerts) {
      const url = z.object({ annotations: z.object({ runbook_url: z.string() }).passthrough() }).passthrough().parse(r).annotations.runbook_url;
      expect(url, r.alert).toBe(`https://github.com/ripple-dev/ripple/blob/main/docs/runbooks.md#${r.alert!.toLowerCase()}`);
      expect(anchors, r.alert).toContain(r.alert!.toLowerCase());
    }
  });

  it('promtool test rules covers scaled and serverless series shapes, not only all-in-one', () => {
    const names = z.object({ tests: z.array(z.object({ name: z.string() }).passthrough()) }).parse(parse(readFileSync(RULES_TEST, 'utf8'))).tests.map((t) => t.name);
    expect(names.filter((n) => n.startsWith('scaled:')).length).toBeGreaterThanOrEqual(4);
    expect(names.filter((n) => n.startsWith('serverless:')).length).toBeGreaterThanOrEqual(1);
  });
});

describe('alert rules: fired by a real Prometheus from a running ripple', () => {
  let sb: TestSandbox;
  let proxy: TcpProxy;
  let cli: RunningCli | undefined;
  let prom: RunningPrometheus | undefined;
  let dir: string;
  let queueConn: Redis | undefined;
  let queue: WorkQueue | undefined;

  beforeAll(async () => {
    sb = await openSandbox('alerts');
    dir = mkdtempSync(path.join(tmpdir(), 'ripple-alert-rules-'));
    // Redis reached through a proxy this test can cut: Redis unreachable as the process sees it.
    const redis = new URL(sb.redisUrl);
    proxy = new TcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    await proxy.start();
  });
  afterAll(async () => {
    proxy.resume();
    await prom?.stop();
    if (cli) await stopCli(cli, 'SIGKILL');
    await queue?.close();
    queueConn?.disconnect();
    await proxy.stop();
    rmSync(dir, { recursive: true, force: true });
    await sb.cleanup();
  });

  it('a queue no worker takes raises RippleQueueNotDraining; Redis cut off raises RippleRedisUnreachable', async () => {
    const prefix = `${sb.prefix}-fire`;
    // `all` with workers for configmap-mirror only: the `slow` queue has no worker, so a job put there never drains.
    cli = await startCli(
      ['all', '--functions', 'configmap-mirror', '--ops-port', '0', '--definitions', 'test/fixtures/http-functions.ts', '--kubeconfig', inject('kubeconfig'), '--redis-url', `redis://127.0.0.1:${proxy.port}`],
      { RIPPLE_PREFIX: prefix, RIPPLE_NAMESPACE: sb.namespace, RIPPLE_WATCH_NAMESPACE: sb.namespace },
    );

    // The shipped rules with every `for:` shortened to 2 s (the only change): the expressions are the ones
    // promtool tested, fired within seconds instead of minutes.
    const rules = rulesSchema.parse(parse(readFileSync(RULES, 'utf8')));
    for (const g of rules.groups) for (const r of g.rules) if (r.for) r.for = '2s';
    const copy = path.join(dir, 'rules.yaml');
    writeFileSync(copy, stringify(rules));
    // 3 s: a scrape while Redis is cut waits up to 2 s for its PING and job counts.
    prom = await startPrometheus({ targets: [`127.0.0.1:${cli.opsPort}`], scrapeIntervalMs: 3000, ruleFiles: [copy] });
    await prom.waitForTargetsUp(60_000);
    const p = prom;
    const alerts = async () => alertsSchema.parse(await (await fetch(`${p.url}/api/v1/alerts`)).json()).data.alerts;
    const firing = async (name: string) => (await alerts()).filter((a) => a.labels.alertname === name && a.state === 'firing');
    const value = async (promql: string) => {
      const body = z.object({ data: z.object({ result: z.array(z.object({ value: z.tuple([z.number(), z.string()]) })) }) }).parse(await p.query(promql));
      return body.data.result[0]?.value[1];
    };
    await waitFor('ripple_redis_up to be scraped as 1', 30_000, async () => (await value('ripple_redis_up')) === '1');
    await waitFor('the leader gauge to be scraped', 60_000, async () => (await value(`leader_election_master_status{name="${prefix}-watcher"}`)) === '1');
    expect(await firing('RippleRedisUnreachable')).toEqual([]);
    expect(await firing('RippleQueueNotDraining')).toEqual([]);

    queueConn = new Redis(sb.redisUrl, { maxRetriesPerRequest: null });
    queue = new WorkQueue({ name: 'slow', connection: queueConn, prefix });
    await queue.add('ns/never-drained');
    const added = Date.now();
    const notDraining = await waitFor('RippleQueueNotDraining to fire for slow', 60_000, async () => {
      const a = (await firing('RippleQueueNotDraining')).find((x) => x.labels.queue === 'slow');
      return a ?? false;
    });
    const drainSeconds = (Date.now() - added) / 1000;
    expect(notDraining.labels).toMatchObject({ severity: 'critical', queue: 'slow' });
    // The queue with a worker is not reported (emit-events, which has none here either, may be).
    expect((await firing('RippleQueueNotDraining')).map((a) => a.labels.queue)).not.toContain('configmap-mirror');

    proxy.cut();
    const cut = Date.now();
    const unreachable = await waitFor('RippleRedisUnreachable to fire', 60_000, async () => (await firing('RippleRedisUnreachable'))[0] ?? false);
    const redisSeconds = (Date.now() - cut) / 1000;
    expect(unreachable.labels).toMatchObject({ severity: 'critical', instance: `127.0.0.1:${cli.opsPort}` });
    expect(await value('ripple_redis_up')).toBe('0');
    console.log(`alert-rules: RippleQueueNotDraining fired ${drainSeconds.toFixed(1)} s after the job was added; RippleRedisUnreachable ${redisSeconds.toFixed(1)} s after Redis was cut (scrape and evaluation every 3 s, for: 2s)`);
  });
});
