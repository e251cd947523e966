// Watch→enqueue latency at a sustained rate of API writes on the sandbox: the time from sending a write
// to the moment its key is on the function's queue, p50/p99, with the API write's own latency beside it
// as the floor (a watch event cannot be enqueued before the write is committed).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { loadKubeConfig } from '../kube/config.js';
import { Resources } from '../kube/resources.js';
import { WorkQueue } from '../queue/work-queue.js';
import { createLogger } from '../base/log.js';
import { startControlPlane } from '../sandbox/control-plane.js';
import { startRedis } from '../sandbox/redis.js';
import { mapToSelf } from '../watcher/mappers.js';
import { Watcher } from '../watcher/watcher.js';
import { nowMs, percentile, round } from './stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const RATE = Number(process.env.BENCH_RATE ?? 50); // writes per second
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

const controlPlane = await startControlPlane({ log: (l) => console.error(l) });
const redisServer = await startRedis();
const kc = loadKubeConfig({ kind: 'kubeconfig', path: controlPlane.kubeconfig });
const core = kc.makeApiClient(CoreV1Api);
const namespace = `bench-watch-${Date.now()}`;
await core.createNamespace({ body: { metadata: { name: namespace } } });
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
const queue = new WorkQueue({ name: 'bench', connection: redis, prefix: `bench-watch-${Date.now()}` });
const sentAt = new Map<string, number>();
const watchLatency: number[] = [];
const writeLatency: number[] = [];
const watcher = new Watcher({
  kc,
  namespace,
  functions: [{ name: 'bench', primary: Resources.configMap, triggers: [{ resource: Resources.configMap, map: mapToSelf }], reconcile: async () => undefined }],
  isLeader: () => true,
  log: createLogger('bench', 'warn'),
  enqueue: async (_fn, key) => {
    await queue.add(key);
    const sent = sentAt.get(key);
    if (sent !== undefined) {
      watchLatency.push(nowMs() - sent);
      sentAt.delete(key);
    }
  },
});
try {
  watcher.start();
  await watcher.waitForSync();
  const total = RATE * SECONDS;
  const interval = 1000 / RATE;
  const start = nowMs();
  const writes: Array<Promise<void>> = [];
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - nowMs();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const name = `cm-${i}`;
    const sent = nowMs();
    sentAt.set(`${namespace}/${name}`, sent);
    writes.push(core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { i: String(i) } } }).then(() => void writeLatency.push(nowMs() - sent)));
  }
  await Promise.all(writes);
  const deadline = Date.now() + 30_000;
  while (watchLatency.length < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const result = {
    bench: 'watch-latency',
    at: new Date().toISOString(),
    ratePerSecond: RATE,
    writes: total,
    delivered: watchLatency.length,
    writeToEnqueueMs: { p50: round(percentile(watchLatency, 50)), p99: round(percentile(watchLatency, 99)) },
    apiWriteMs: { p50: round(percentile(writeLatency, 50)), p99: round(percentile(writeLatency, 99)) },
  };
  console.log(`watch→enqueue at ${RATE} writes/s: p50 ${result.writeToEnqueueMs.p50} ms, p99 ${result.writeToEnqueueMs.p99} ms (API write alone: p50 ${result.apiWriteMs.p50} ms, p99 ${result.apiWriteMs.p99} ms); ${result.delivered}/${total} delivered`);
  writeFileSync(path.join(here, 'results/watch-latency.json'), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await watcher.stop();
  await queue.close();
  redis.disconnect();
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  await redisServer.stop();
  await controlPlane.stop();
}
