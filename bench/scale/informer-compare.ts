// bench/scale.ts's watcher-memory comparison: N Pods (nodeName set to a KWOK node, so nothing schedules
// them), N/10 Deployments (0 replicas) and N/10 headless Services, then the RSS of Ripple's watcher for
// those kinds (watch-rss.ts) beside a client-go SharedInformerFactory for them (bench/informer/, built
// from the Go module proxy into .cache/bench/), each its own process, alternating, best of two.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { kubeRequest } from '../../kube/raw.js';
import { collectionPath, Resources } from '../../kube/resources.js';
import { nowMs, round } from '../stats.js';
import { bounded, observe, until, type Obj } from './observe.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const IMAGE = 'registry.k8s.io/pause:3.10';
/** The API with high concurrency: the bench's creates are not what is measured. */
const CREATE_CONCURRENCY = 64;

const sampleSchema = z.object({
  variant: z.string(),
  objects: z.number(),
  rssStartMiB: z.number(),
  rssSyncMiB: z.number(),
  rssGcMiB: z.number(),
  heapMiB: z.number(),
  syncMs: z.number(),
});
export type WatchRssSample = z.infer<typeof sampleSchema>;

export interface CompareResult {
  pods: number;
  deployments: number;
  services: number;
  createSeconds: number;
  best: WatchRssSample[];
  samples: WatchRssSample[];
}

/** Builds the Go informer with the machine's Go toolchain (modules from the Go module proxy). */
export function buildInformer(): string {
  const out = path.join(root, '.cache', 'bench', 'informer');
  mkdirSync(path.dirname(out), { recursive: true });
  execFileSync('go', ['build', '-o', out, '.'], { cwd: path.join(root, 'bench', 'informer'), stdio: 'inherit' });
  return out;
}

/**
 * The checkout compiled to JavaScript with its own tsconfig (tsc, emitting into `.cache/dist` inside it),
 * for the watcher's RSS without the tsx loader. Returns the compiled tree's root. tsc exits non-zero on a
 * type error but still writes every file; the compiled watch-rss.js must exist.
 */
export function compileCheckout(checkout: string): string {
  const out = path.join(checkout, '.cache', 'dist');
  const tsc = path.join(root, 'node_modules', '.bin', 'tsc');
  const run = spawnSync(tsc, ['-p', path.join(checkout, 'tsconfig.json'), '--noEmit', 'false', '--outDir', out, '--rootDir', checkout], { encoding: 'utf8' });
  if (!existsSync(path.join(out, 'bench', 'scale', 'watch-rss.js'))) throw new Error(`compiling ${checkout} failed: ${run.stdout}${run.stderr}`);
  return out;
}

function runChild(cmd: string, args: string[]): Promise<WatchRssSample> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${path.basename(cmd)} ${args.join(' ')} exited ${code}: ${out}`));
      resolve(sampleSchema.parse(JSON.parse(out.trim().split('\n').pop() ?? '')));
    });
  });
}

function pod(namespace: string, i: number, node: string): Record<string, unknown> {
  const owner = `inf-${Math.floor(i / 2)}`;
  return {
    metadata: {
      name: `p-${i}`,
      namespace,
      labels: { 'modelserving.volcano.sh/name': owner, 'modelserving.volcano.sh/group-name': `${owner}-0`, 'modelserving.volcano.sh/role': 'main' },
    },
    spec: {
      nodeName: node,
      containers: [{ name: 'main', image: IMAGE, env: [{ name: 'GROUP_SIZE', value: '2' }, { name: 'WORKER_INDEX', value: String(i % 2) }] }],
    },
  };
}

function deployment(namespace: string, i: number): Record<string, unknown> {
  const labels = { app: `d-${i}` };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `d-${i}`, namespace, labels },
    spec: { replicas: 0, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'main', image: IMAGE }] } } },
  };
}

function service(namespace: string, i: number): Record<string, unknown> {
  const owner = `inf-${i}`;
  return {
    metadata: { name: `s-${i}`, namespace, labels: { 'modelserving.volcano.sh/name': owner } },
    spec: { clusterIP: 'None', publishNotReadyAddresses: true, selector: { 'modelserving.volcano.sh/group-name': `${owner}-0` } },
  };
}

/** Grows the namespace to `pods` Pods (and a tenth as many Deployments and Services), all Pods Running. */
export async function populate(kc: KubeConfig, namespace: string, nodes: string[], from: number, pods: number): Promise<number> {
  const running = new Set<string>();
  const watch = await observe(kc, `/api/v1/namespaces/${namespace}/pods`, (type, obj: Obj) => {
    const name = obj.metadata?.name ?? '';
    if (type !== 'DELETED' && (obj.status as { phase?: string } | undefined)?.phase === 'Running') running.add(name);
  });
  const t0 = nowMs();
  try {
    const writes: Array<[string, Record<string, unknown>]> = [];
    for (let i = from; i < pods; i++) writes.push([collectionPath(Resources.pod, namespace), pod(namespace, i, nodes[i % nodes.length] ?? '')]);
    for (let i = Math.floor(from / 10); i < Math.floor(pods / 10); i++) {
      writes.push([collectionPath(Resources.deployment, namespace), deployment(namespace, i)]);
      writes.push([collectionPath(Resources.service, namespace), service(namespace, i)]);
    }
    await bounded(writes, CREATE_CONCURRENCY, async ([p, body]) => void (await kubeRequest(kc, p, { method: 'POST', body })));
    await until(`${pods} Pods Running`, 900_000, () => running.size >= pods, 1_000);
  } finally {
    watch.stop();
  }
  return round((nowMs() - t0) / 1000, 1);
}

export async function compareAt(checkout: string, kubeconfig: string, informer: string, pods: number, createSeconds: number, dist?: string): Promise<CompareResult> {
  const variants: Array<[string, () => Promise<WatchRssSample>]> = [
    ['ripple', () => runChild(process.execPath, ['--import', 'tsx', '--expose-gc', path.join(here, 'watch-rss.ts'), kubeconfig, checkout])],
    ...(dist ? [['ripple-compiled', () => runChild(process.execPath, ['--expose-gc', path.join(dist, 'bench', 'scale', 'watch-rss.js'), kubeconfig, dist])] as [string, () => Promise<WatchRssSample>]] : []),
    ['client-go', () => runChild(informer, ['-kubeconfig', kubeconfig])],
    ['client-go-stripped', () => runChild(informer, ['-kubeconfig', kubeconfig, '-strip-managed-fields'])],
  ];
  const samples: WatchRssSample[] = [];
  for (let r = 0; r < 2; r++) {
    for (const [name, run] of r === 0 ? variants : [...variants].reverse()) {
      const s = await run();
      console.log(`bench: ${pods} pods, ${name}: ${JSON.stringify(s)}`);
      samples.push(s);
    }
  }
  const best = variants.map(([name]) => {
    const mine = samples.filter((s) => s.variant === name);
    const low = (k: 'rssStartMiB' | 'rssSyncMiB' | 'rssGcMiB' | 'heapMiB' | 'syncMs') => Math.min(...mine.map((s) => s[k]));
    return { variant: name, objects: mine[0]?.objects ?? 0, rssStartMiB: low('rssStartMiB'), rssSyncMiB: low('rssSyncMiB'), rssGcMiB: low('rssGcMiB'), heapMiB: low('heapMiB'), syncMs: low('syncMs') };
  });
  return { pods, deployments: Math.floor(pods / 10), services: Math.floor(pods / 10), createSeconds, best, samples };
}
