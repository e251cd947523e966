import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../sandbox/free-port.js';

/** A real Prometheus (Debian's `prometheus` binary) for the autoscaler's tests. */
export interface RunningPrometheus {
  /** Base URL of its HTTP API, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Resolves once every target has been scraped successfully at least once. */
  waitForTargetsUp(timeoutMs?: number): Promise<void>;
  /** An instant query's JSON body (for tests that check what the autoscaler will see). */
  query(promql: string): Promise<unknown>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** `host:port` of each scrape target (the vLLM-metrics emitter). */
  targets: string[];
  /** Short, so a value the test sets is in Prometheus within about a second. */
  scrapeIntervalMs?: number;
  binary?: string;
  /** Rule files to load (alert-rules.test.ts); rules are evaluated every scrape interval. */
  ruleFiles?: string[];
  /**
   * `host:port` of Ripple processes serving `/metrics`, scraped as job `ripple` the way a
   * ServiceMonitor would: without honor_labels, so the gauges' `namespace` becomes `exported_namespace`.
   */
  rippleTargets?: string[];
  /** Require HTTP basic auth on the API (Prometheus's web config); `bcryptHash` is the password's. */
  basicAuth?: { user: string; password: string; bcryptHash: string };
}

/**
 * Starts Prometheus on a free loopback port with a temporary config and TSDB directory. The targets
 * carry `namespace`, `pod` and `model_name` on every series themselves, as vLLM pods do after
 * Kubernetes service discovery and relabeling; `honor_labels` keeps them as they are.
 */
export async function startPrometheus(opts: PrometheusOptions): Promise<RunningPrometheus> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-prometheus-'));
  const interval = `${Math.max(1, Math.round((opts.scrapeIntervalMs ?? 1000) / 1000))}s`;
  const config = {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    ...(opts.ruleFiles?.length ? { rule_files: opts.ruleFiles } : {}),
    scrape_configs: [
      { job_name: 'vllm', honor_labels: true, static_configs: [{ targets: opts.targets }] },
      // The target's own `namespace` (the controller's, as Kubernetes service discovery sets it) makes
      // Prometheus rename the gauges' `namespace` to `exported_namespace`, as in a cluster.
      ...(opts.rippleTargets?.length ? [{ job_name: 'ripple', static_configs: [{ targets: opts.rippleTargets, labels: { namespace: 'ripple-system' } }] }] : []),
    ],
  };
  const configFile = path.join(dir, 'prometheus.yml');
  writeFileSync(configFile, stringify(config));
  const webConfigFile = path.join(dir, 'web.yml');
  if (opts.basicAuth) writeFileSync(webConfigFile, stringify({ basic_auth_users: { [opts.basicAuth.user]: opts.basicAuth.bcryptHash } }));
  const url = `http://127.0.0.1:${port}`;
  const stderr: string[] = [];
  const child: ChildProcess = spawn(
    opts.binary ?? 'prometheus',
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1h',
      '--log.level=warn',
      ...(opts.basicAuth ? [`--web.config.file=${webConfigFile}`] : []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  child.stderr?.on('data', (b: Buffer) => {
    stderr.push(b.toString());
    if (stderr.length > 50) stderr.shift();
  });
  const spawnError = new Promise<never>((_, reject) => child.once('error', (err) => reject(new Error(`prometheus could not start (install Debian's prometheus package, or run scripts/ensure-deps.sh): ${err.message}`))));

  const auth = opts.basicAuth ? { Authorization: `Basic ${Buffer.from(`${opts.basicAuth.user}:${opts.basicAuth.password}`).toString('base64')}` } : undefined;
  const get = async (p: string): Promise<Response> => fetch(`${url}${p}`, { signal: AbortSignal.timeout(5_000), ...(auth ? { headers: auth } : {}) });
  const poll = async (what: string, timeoutMs: number, ok: () => Promise<boolean>) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}: ${stderr.join('')}`);
      if (await ok().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${stderr.join('')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await Promise.race([spawnError, poll('Prometheus to be ready', 60_000, async () => (await get('/-/ready')).ok)]);
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    url,
    waitForTargetsUp: (timeoutMs = 30_000) =>
      poll('every scrape target to be up', timeoutMs, async () => {
        const body = (await (await get(`/api/v1/query?query=${encodeURIComponent('min(up)')}`)).json()) as {
          data?: { result?: Array<{ value?: [number, string] }> };
        };
        return body.data?.result?.[0]?.value?.[1] === '1';
      }),
    query: async (promql) => (await get(`/api/v1/query?query=${encodeURIComponent(promql)}`)).json() as Promise<unknown>,
    stop,
  };
}
