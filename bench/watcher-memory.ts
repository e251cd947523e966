// The watcher's memory for N objects, before and after issue 12's lighter watcher, in the same run: N
// ConfigMaps made by server-side apply (so each carries managedFields, as objects on a real cluster do)
// are listed and watched by one ListWatch per child process, each child measuring its own heap and RSS
// (the heap the store retains, after forced GCs; the heap's and RSS's sampled peak while the first list
// is taken in; the RSS after sync):
//   before          the watcher at BENCH_BASELINE_REF (default: the commit before the lighter watcher):
//                   whole objects, managedFields included, the first list built as a second full map;
//   whole           this checkout, no projection: whole objects without managedFields;
//   metadata-only   this checkout, ONLY_METADATA: the API server sends PartialObjectMetadata.
// Each variant runs twice, alternating, and the lower of the two is reported. Own sandbox: set
// RIPPLE_SANDBOX_DIR (it creates and deletes N ConfigMaps). BENCH_OBJECTS sets N (default 2000).
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { z } from 'zod';
import { loadKubeConfig } from '../kube/config.js';
import { kubeRequest } from '../kube/raw.js';
import { collectionPath, Resources } from '../kube/resources.js';
import { startControlPlane } from '../sandbox/control-plane.js';
import type * as ListWatchModule from '../watcher/list-watch.js';
import type * as LogModule from '../base/log.js';
import { baselineCheckout } from './baseline.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

const sampleSchema = z.object({
  variant: z.string(),
  objects: z.number(),
  /** Heap retained by the store: heap after sync minus heap once the store is emptied (both after GC). */
  storeMiB: z.number(),
  /** Heap growth at its sampled peak while the first list was taken in, over the heap before the watch. */
  peakHeapMiB: z.number(),
  /** The process's RSS after sync, and its sampled peak (absolute; the runtime and modules included). */
  rssMiB: z.number(),
  peakRssMiB: z.number(),
  syncMs: z.number(),
});
type Sample = z.infer<typeof sampleSchema>;

const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/** One measurement: this process lists and watches the namespace's ConfigMaps with the variant's code. */
async function child(variant: string, checkout: string, kubeconfig: string, namespace: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const { ListWatch } = (await import(pathToFileURL(path.join(checkout, 'watcher/list-watch.ts')).href)) as typeof ListWatchModule;
  // The logger moved from runtime/ to base/; a baseline checkout from before has it at its old place.
  const logModule = existsSync(path.join(checkout, 'base')) ? 'base/log.ts' : 'runtime/log.ts';
  const { createLogger } = (await import(pathToFileURL(path.join(checkout, logModule)).href)) as typeof LogModule;
  const { ONLY_METADATA } = await import('../watcher/projection.js');
  const kc = loadKubeConfig({ kind: 'kubeconfig', path: kubeconfig });
  gc();
  gc();
  const before = process.memoryUsage();
  let peakHeap = before.heapUsed;
  let peakRss = before.rss;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed);
    peakRss = Math.max(peakRss, m.rss);
  }, 5);
  const started = Date.now();
  const lw = new ListWatch({
    kc,
    resource: Resources.configMap,
    namespace,
    log: createLogger('bench-watcher-memory', 'warn'),
    onEvent: async () => undefined,
    ...(variant === 'metadata-only' ? { projection: ONLY_METADATA } : {}),
  });
  await lw.waitForSync(300_000);
  const syncMs = Date.now() - started;
  clearInterval(sampler);
  gc();
  gc();
  const after = process.memoryUsage();
  const objects = lw.store.size;
  // Emptied through the API both versions have; what the heap loses is what the store held.
  lw.store.replace([]);
  gc();
  gc();
  const emptied = process.memoryUsage();
  const sample: Sample = {
    variant,
    objects,
    storeMiB: mib(after.heapUsed - emptied.heapUsed),
    peakHeapMiB: mib(peakHeap - before.heapUsed),
    rssMiB: mib(after.rss),
    peakRssMiB: mib(Math.max(peakRss, after.rss)),
    syncMs,
  };
  await lw.stop();
  process.stdout.write(`${JSON.stringify(sample)}\n`);
}

function measure(variant: string, checkout: string, kubeconfig: string, namespace: string): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', '--expose-gc', fileURLToPath(import.meta.url), 'child', variant, checkout, kubeconfig, namespace], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`${variant}: child exited ${code}: ${out}`));
      resolve(sampleSchema.parse(JSON.parse(line)));
    });
  });
}

/** N ConfigMaps by server-side apply, a few at a time; each has 10 data keys, so its managedFields list 10 fields. */
async function createConfigMaps(kubeconfig: string, namespace: string, n: number): Promise<void> {
  const kc = loadKubeConfig({ kind: 'kubeconfig', path: kubeconfig });
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const name = `cm-${i}`;
      const data = Object.fromEntries(Array.from({ length: 10 }, (_, k) => [`key-${k}`, `value-${i}-${k}-${'v'.repeat(20)}`]));
      await kubeRequest(kc, `${collectionPath(Resources.configMap, namespace)}/${name}`, {
        method: 'PATCH',
        query: { fieldManager: 'bench-watcher-memory', force: true },
        contentType: 'application/apply-patch+yaml',
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels: { app: 'bench', shard: String(i % 10) } }, data },
      });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

async function main(): Promise<void> {
  const n = Number(process.env.BENCH_OBJECTS ?? 2000);
  const ref = process.env.BENCH_BASELINE_REF ?? '1824b4a^';
  const baseline = baselineCheckout(root, ref);
  const controlPlane = await startControlPlane({ log: (l) => console.error(l) });
  const kc = loadKubeConfig({ kind: 'kubeconfig', path: controlPlane.kubeconfig });
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = `bench-wmem-${Date.now()}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  try {
    const t0 = Date.now();
    await createConfigMaps(controlPlane.kubeconfig, namespace, n);
    console.log(`bench: ${n} ConfigMaps applied in ${Math.round((Date.now() - t0) / 1000)} s`);
    const variants: Array<[string, string]> = [
      ['before', baseline],
      ['whole', root],
      ['metadata-only', root],
    ];
    const samples: Sample[] = [];
    for (let round = 0; round < 2; round++) {
      for (const [variant, checkout] of round === 0 ? variants : [...variants].reverse()) {
        const s = await measure(variant, checkout, controlPlane.kubeconfig, namespace);
        console.log(`bench: ${JSON.stringify(s)}`);
        samples.push(s);
      }
    }
    const best = variants.map(([variant]) => {
      const mine = samples.filter((s) => s.variant === variant);
      const low = (k: keyof Omit<Sample, 'variant'>) => Math.min(...mine.map((s) => s[k]));
      return { variant, objects: low('objects'), storeMiB: low('storeMiB'), peakHeapMiB: low('peakHeapMiB'), rssMiB: low('rssMiB'), peakRssMiB: low('peakRssMiB'), syncMs: low('syncMs') };
    });
    const result = { bench: 'watcher-memory', at: new Date().toISOString(), objects: n, baseline: ref, kind: 'ConfigMap (10 data keys, server-side applied)', variants: best, samples };
    for (const b of best) {
      console.log(`${b.variant.padEnd(14)} store ${b.storeMiB} MiB, heap peak +${b.peakHeapMiB} MiB, RSS ${b.rssMiB} MiB (peak ${b.peakRssMiB}), sync ${b.syncMs} ms, ${b.objects} objects`);
    }
    writeFileSync(path.join(here, 'results/watcher-memory.json'), `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    await controlPlane.stop();
  }
}

if (process.argv[2] === 'child') {
  const [variant, checkout, kubeconfig, namespace] = process.argv.slice(3) as [string, string, string, string];
  await child(variant, checkout, kubeconfig, namespace);
} else {
  await main();
}
