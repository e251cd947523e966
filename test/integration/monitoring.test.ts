import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createMs, msManifest } from '../fixtures/modelserving-fixtures.js';
import { startCli, stopCli, type RunningCli } from '../fixtures/http-cli.js';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Issue 32, "Monitoring that is right in every mode": a real `ripple all` (the process that exports every
// series any reconciling mode exports) and the admission webhook function (`ripple webhook --function
// --ops-port`, the only exporter of the admission metrics) on the sandbox, their /metrics scraped by this test
// and by a real Prometheus: the new metrics (client-go's rest_client_* for its API requests, the workqueue
// in-progress gauges) carry real values, and every query of the shipped Grafana dashboard
// (infra/grafana/ripple.json) names only metrics the two export and runs in Prometheus.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DASHBOARD = path.join(root, 'infra/grafana/ripple.json');

const targetSchema = z.object({ expr: z.string(), refId: z.string() }).passthrough();
const panelSchema: z.ZodType<{ title: string; type: string; targets?: Array<z.infer<typeof targetSchema>>; panels?: unknown[] }> = z
  .object({ title: z.string(), type: z.string(), targets: z.array(targetSchema).optional(), panels: z.array(z.unknown()).optional() })
  .passthrough();
const dashboardSchema = z.object({ uid: z.string(), title: z.string(), panels: z.array(panelSchema), templating: z.object({ list: z.array(z.object({ name: z.string() }).passthrough()) }) }).passthrough();

/** Every panel's queries, rows' nested panels included. */
function dashboardQueries(): Array<{ panel: string; expr: string }> {
  const dash = dashboardSchema.parse(JSON.parse(readFileSync(DASHBOARD, 'utf8')));
  const out: Array<{ panel: string; expr: string }> = [];
  const visit = (p: z.infer<typeof panelSchema>) => {
    for (const t of p.targets ?? []) out.push({ panel: p.title, expr: t.expr });
    for (const child of p.panels ?? []) visit(panelSchema.parse(child));
  };
  dash.panels.forEach(visit);
  return out;
}

// PromQL words that are not metric names: functions, aggregations, keywords, label-list modifiers.
const NOT_METRICS = new Set(['sum', 'min', 'max', 'avg', 'count', 'rate', 'irate', 'increase', 'histogram_quantile', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'label_replace', 'absent', 'topk', 'bottomk', 'clamp_min', 'clamp_max', 'delta', 'deriv', 'time', 'vector', 'scalar']);

/**
 * The metric names a PromQL expression reads: its identifiers once label matchers, label lists (`by (…)`,
 * `on (…)`), range selectors and string literals are cut out, less functions and keywords.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    if (NOT_METRICS.has(m[0])) continue;
    names.add(m[0]);
  }
  return [...names];
}

/** Sample names in an exposition text (histograms' _bucket/_sum/_count included) and the families of # TYPE lines. */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)/.exec(line);
    if (type) {
      names.add(type[1]!);
      if (type[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${type[1]}${s}`);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
    if (sample) names.add(sample[1]!);
  }
  return names;
}

let sb: TestSandbox;
let cli: RunningCli | undefined;
let webhook: RunningCli | undefined;
let prom: RunningPrometheus | undefined;
let metricsText = '';
beforeAll(async () => {
  sb = await openSandbox('monitoring');
});
afterAll(async () => {
  await prom?.stop();
  if (cli) await stopCli(cli, 'SIGKILL');
  if (webhook) await stopCli(webhook, 'SIGKILL');
  await sb?.cleanup();
});

describe('monitoring of a running ripple', () => {
  it('exports rest_client_* for its real API requests and the workqueue in-progress gauges for its reconciles', async () => {
    cli = await startCli(['all', '--ops-port', '0', '--kubeconfig', inject('kubeconfig'), '--redis-url', sb.redisUrl], {
      RIPPLE_PREFIX: sb.prefix,
      RIPPLE_NAMESPACE: sb.namespace,
      RIPPLE_WATCH_NAMESPACE: sb.namespace,
    });
    const base = `http://127.0.0.1:${cli.opsPort}`;
    // A ModelServing makes reconcile-modelserving reconcile (and write pods, Services, status).
    await createMs(sb, msManifest('mon', sb.namespace));
    const scrape = async () => (await fetch(`${base}/metrics`)).text();
    metricsText = await waitFor('reconcile-modelserving to have reconciled', 90_000, async () => {
      const text = await scrape();
      return /^controller_runtime_reconcile_total\{controller="reconcile-modelserving",result="success"\} [1-9]/m.test(text) ? text : false;
    });
    const host = new URL(sb.kc.getCurrentCluster()!.server).host;
    const sample = (re: RegExp) => Number(re.exec(metricsText)?.[1] ?? NaN);
    // client-go's names and labels, counting requests that really went to the sandbox's API server.
    const gets = sample(new RegExp(`^rest_client_requests_total\\{code="200",method="GET",host="${host.replace(/[.]/g, '\\.')}"\\} (\\d+)`, 'm'));
    expect(gets).toBeGreaterThan(0);
    expect(metricsText).toMatch(new RegExp(`^rest_client_requests_total\\{code="201",method="POST",host="${host.replace(/[.]/g, '\\.')}"\\} [1-9]`, 'm'));
    const count = sample(new RegExp(`^rest_client_request_duration_seconds_count\\{verb="GET",host="${host.replace(/[.]/g, '\\.')}"\\} (\\d+)`, 'm'));
    // Every GET is timed, whatever its answer.
    expect(count).toBeGreaterThanOrEqual(gets);
    // The in-progress gauges exist per function that reconciled, and are small once it is idle.
    const longest = sample(/^workqueue_longest_running_processor_seconds\{name="reconcile-modelserving",controller="reconcile-modelserving"\} (\S+)/m);
    expect(longest).toBeGreaterThanOrEqual(0);
    expect(longest).toBeLessThan(60);
    expect(metricsText).toMatch(/^workqueue_unfinished_work_seconds\{name="reconcile-modelserving",controller="reconcile-modelserving"\} \S+/m);
    console.log(`monitoring: ${gets} GETs answered 200 counted in rest_client_requests_total; longest running reconcile ${longest} s at scrape`);
  });

  it("every query of the Grafana dashboard names only metrics the process exports, and runs in a real Prometheus", async () => {
    expect(metricsText).not.toBe('');
    // The webhook function's ops port, after one review as the API server sends it (a Pod CREATE it gates).
    webhook = await startCli(['webhook', '--function', '--listen', '127.0.0.1', '--port', '0', '--ops-port', '0'], {});
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u-1', operation: 'CREATE', namespace: sb.namespace, name: 'p',
        kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' },
        object: { metadata: { name: 'p', labels: { 'kusionstack.io/control': 'true' } }, spec: { containers: [{ name: 'main', image: 'pause' }] } },
      },
    };
    const answered = await fetch(`http://127.0.0.1:${webhook.port}/ops-lifecycle/pod-readiness-gate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(review) });
    expect(answered.status).toBe(200);
    const webhookText = await (await fetch(`http://127.0.0.1:${webhook.opsPort}/metrics`)).text();
    expect(webhookText).toMatch(/^ripple_admission_reviews_total\{webhook="pod-readiness-gate\.ops-lifecycle\.ripple\.dev",operation="CREATE",result="patched"\} 1$/m);
    const names = new Set([...exported(metricsText), ...exported(webhookText)]);
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThanOrEqual(20);
    const unknown = queries.flatMap((q) => metricNames(q.expr).filter((n) => !names.has(n)).map((n) => `${q.panel}: ${n}`));
    expect(unknown).toEqual([]);
    // The extractor finds what it should (a check of the check): names from selectors and functions alike.
    expect(metricNames('histogram_quantile(0.99, sum by (verb, le) (rate(rest_client_request_duration_seconds_bucket{job=~"$job"}[5m])))')).toEqual(['rest_client_request_duration_seconds_bucket']);
    expect(metricNames('a_total / on (x) group_left () b')).toEqual(['a_total', 'b']);

    // The same queries in Prometheus, scraping this process as the chart's PodMonitor would (the `component`
    // label is absent here, which `component!="function"` matches).
    prom = await startPrometheus({ targets: [], rippleTargets: [`127.0.0.1:${cli!.opsPort}`, `127.0.0.1:${webhook.opsPort}`], scrapeIntervalMs: 1000 });
    await prom.waitForTargetsUp(60_000);
    const p = prom;
    const resultSchema = z.object({ status: z.string(), data: z.object({ result: z.array(z.unknown()) }).optional(), error: z.string().optional() }).passthrough();
    const run = async (expr: string) => resultSchema.parse(await p.query(expr.replaceAll('$job', '.+').replaceAll('$__rate_interval', '1m')));
    // Two scrapes at least, so rate() has points.
    await waitFor('rest_client_requests_total to have a rate', 30_000, async () => ((await run('sum(rate(rest_client_requests_total{job=~"$job"}[$__rate_interval]))')).data?.result.length ?? 0) > 0, 500);
    const empty: string[] = [];
    for (const q of queries) {
      const r = await run(q.expr);
      expect(r.status, `${q.panel}: ${q.expr}: ${r.error ?? ''}`).toBe('success');
      if ((r.data?.result.length ?? 0) === 0) empty.push(q.panel);
    }
    // Panels that show data on a single healthy all-in-one: leadership, Redis, watches, requests, CPU.
    for (const panel of ['Watcher leader', 'Redis reachable (lowest over processes)', 'Watches connected', 'Requests per second by code', 'CPU', 'Longest running reconcile']) expect(empty, panel).not.toContain(panel);
    console.log(`monitoring: ${queries.length} dashboard queries ran; empty on an idle all-in-one: ${empty.join(', ') || 'none'}`);
  });
});
