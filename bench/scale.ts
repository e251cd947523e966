// Ripple at scale on the sandbox (issue 12, item 4):
//   growth   100, 300 and 1,000 ModelServings (1 ServingGroup × 1 role × entry + 1 worker: 2 Pods and 1
//            headless Service each) created at once, converged by one `ripple watcher` and W `ripple worker`
//            processes: time to all Available, API requests and reconciles per object, event→reconcile
//            latency under that load, Redis memory per object, watcher and worker RSS;
//   sweep    the same at one size with 1, 2 and 4 worker processes, with the CPU of kube-apiserver, etcd,
//            Redis, KWOK, the watcher and the workers, to say which one is the bound;
//   informer the watcher's RSS for N Pods (+N/10 Deployments, +N/10 Services) beside a client-go informer
//            for the same kinds (bench/informer/, built from the Go module proxy).
// Results: bench/results/scale.{json,md,svg}, rewritten after every run so a partial run keeps what it measured.
//
// Not a test. Use its own sandbox, as it loads the API server for minutes:
//   RIPPLE_SANDBOX_DIR=$PWD/.sandbox-scale npm run bench -- scale
// Env: BENCH_SCALE_COUNTS (100,300,1000), BENCH_SCALE_WORKERS (workers in the growth runs, 1),
// BENCH_SCALE_SWEEP (worker counts, 1,2,4), BENCH_SCALE_SWEEP_AT (300), BENCH_INFORMER_PODS (1000,10000;
// empty skips), BENCH_SCALE_TIMEOUT_S (1800 per run), BENCH_SCALE_REF (the commit whose Ripple runs, HEAD). REDIS_URL: use that Redis instead of a fresh one.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadKubeConfig } from '../kube/config.js';
import { kubeRequest } from '../kube/raw.js';
import { startControlPlane } from '../sandbox/control-plane.js';
import { startRedis } from '../sandbox/redis.js';
import { baselineCheckout } from './baseline.js';
import { buildInformer, compareAt, compileCheckout, populate } from './scale/informer-compare.js';
import { runModelServings, type RunResult } from './scale/modelservings.js';
import { createNamespace } from './scale/observe.js';
import { sandboxComponents } from './scale/procstat.js';
import { busiest, markdown, plot, type ScaleResults } from './scale/report.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const list = (v: string | undefined, d: string) => (v ?? d).split(',').map((s) => s.trim()).filter(Boolean).map(Number);
const COUNTS = list(process.env.BENCH_SCALE_COUNTS, '100,300,1000');
const GROWTH_WORKERS = Number(process.env.BENCH_SCALE_WORKERS ?? 1);
const SWEEP = list(process.env.BENCH_SCALE_SWEEP, '1,2,4');
const SWEEP_AT = Number(process.env.BENCH_SCALE_SWEEP_AT ?? 300);
const INFORMER_PODS = list(process.env.BENCH_INFORMER_PODS, '1000,10000');
const TIMEOUT_MS = Number(process.env.BENCH_SCALE_TIMEOUT_S ?? 1800) * 1000;
/** Extra KWOK nodes with room for the runs' Pods (the sandbox's own three take 250 each). */
const SCALE_NODES = Array.from({ length: 4 }, (_, i) => `kwok-scale-${i}`);

function kubectl(kubeconfig: string, args: string[], input?: string): void {
  const bin = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
  const out = spawnSync(bin, ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', input });
  if (out.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${out.stderr}`);
}

function scaleNodes(kubeconfig: string): void {
  const nodes = SCALE_NODES.map((name) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' }, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', type: 'kwok' } },
    status: { allocatable: { cpu: '1000', memory: '4Ti', pods: '5000' }, capacity: { cpu: '1000', memory: '4Ti', pods: '5000' } },
  }));
  kubectl(kubeconfig, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }));
}

// `scale.ts report`: rewrite scale.md and scale.svg from scale.json (after a change to the report).
if (process.argv[2] === 'report') {
  const saved = JSON.parse(readFileSync(path.join(here, 'results/scale.json'), 'utf8')) as ScaleResults;
  writeFileSync(path.join(here, 'results/scale.md'), markdown(saved));
  writeFileSync(path.join(here, 'results/scale.svg'), plot(saved));
  process.exit(0);
}

// Ripple runs from a checkout of a commit (BENCH_SCALE_REF, default HEAD): the tree may hold edits in progress.
const REF = process.env.BENCH_SCALE_REF ?? 'HEAD';
const checkout = baselineCheckout(root, REF);
const controlPlane = await startControlPlane({ log: (l) => console.error(l) });
const redis = await startRedis({ log: (l) => console.error(l) });
const sandboxDir = process.env.RIPPLE_SANDBOX_DIR ?? path.join(root, '.sandbox');
const results: ScaleResults = {
  bench: 'scale',
  at: new Date().toISOString(),
  node: process.version,
  ref: execFileSync('git', ['-C', checkout, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
  machine: { cores: cpus().length },
  shape: 'ModelServings of 1 ServingGroup × 1 role × (1 entry + 1 worker): 2 Pods and 1 headless Service each',
  growth: [],
  sweep: [],
  informer: [],
};
// Only the informer comparison (BENCH_SCALE_COUNTS= BENCH_SCALE_SWEEP=): its own file, so the growth and
// sweep results of the last full run stay.
const informerOnly = COUNTS.length === 0 && SWEEP.length === 0;
const write = () => {
  mkdirSync(path.join(here, 'results'), { recursive: true });
  if (informerOnly) return writeFileSync(path.join(here, 'results/scale-informer.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(path.join(here, 'results/scale.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(path.join(here, 'results/scale.md'), markdown(results));
  writeFileSync(path.join(here, 'results/scale.svg'), plot(results));
};
const say = (r: RunResult) =>
  console.log(
    `bench: ${r.modelServings} ModelServings, ${r.workers} worker(s): ${r.convergeSeconds} s, ${r.requestsPerObject} requests/object, ` +
      `${r.reconcilesPerObject.untilQuiet} reconciles/object, p99 ${r.eventToReconcileMs.p99} ms, Redis ${r.redis.bytesPerObject} B/object, ` +
      `watcher ${r.rssMiB.watcher} MiB, workers ${r.rssMiB.workers.join('/')} MiB; busiest ${JSON.stringify(busiest(r).slice(0, 3))}`,
  );

try {
  kubectl(controlPlane.kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', path.join(checkout, 'infra/crds')]);
  scaleNodes(controlPlane.kubeconfig);
  const kc = loadKubeConfig({ kind: 'kubeconfig', path: controlPlane.kubeconfig });
  const components = await sandboxComponents(sandboxDir, redis.source === 'REDIS_URL' ? undefined : redis.url);
  const base = { checkout, kc, kubeconfig: controlPlane.kubeconfig, redisUrl: redis.url, components, timeoutMs: TIMEOUT_MS };

  for (const count of COUNTS) {
    const r = await runModelServings({ ...base, count, workers: GROWTH_WORKERS });
    say(r);
    results.growth.push(r);
    write();
  }
  for (const workers of SWEEP) {
    const reuse = results.growth.find((r) => r.modelServings === SWEEP_AT && r.workers === workers);
    const r = reuse ?? (await runModelServings({ ...base, count: SWEEP_AT, workers }));
    if (!reuse) say(r);
    results.sweep.push(r);
    write();
  }
  if (INFORMER_PODS.length > 0) {
    const informer = buildInformer();
    // The watcher also from the checkout compiled with tsc, as a production image without tsx would run it.
    const dist = compileCheckout(checkout);
    const namespace = `scale-informer-${Date.now().toString(36)}`;
    await createNamespace(kc, namespace);
    try {
      let have = 0;
      for (const pods of INFORMER_PODS) {
        const createSeconds = await populate(kc, namespace, SCALE_NODES, have, pods);
        have = pods;
        console.log(`bench: ${pods} Pods Running (+${createSeconds} s)`);
        results.informer.push(await compareAt(checkout, controlPlane.kubeconfig, informer, pods, createSeconds, dist));
        write();
      }
    } finally {
      // Not waited for: the sandbox is the bench's own and the next run starts from a fresh namespace.
      await kubeRequest(kc, `/api/v1/namespaces/${namespace}`, { method: 'DELETE' }).catch(() => undefined);
    }
  }
  write();
  console.log(`bench: results in ${path.relative(root, path.join(here, informerOnly ? 'results/scale-informer.json' : 'results/scale.md'))}`);
} finally {
  await redis.stop();
  await controlPlane.stop();
}
