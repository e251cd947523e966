import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { allFunctions } from '../functions/index.js';
import { loadKubeConfig, type KubeTarget } from '../kube/config.js';
import { startOpsServer } from '../ops/server.js';
import { QueueMetrics } from '../queue/metrics.js';
import { loadProcessConfig } from '../runtime/config.js';
import { FunctionHost } from '../runtime/host.js';
import { createLogger } from '../runtime/log.js';
import { startControlPlane, type ControlPlane } from '../sandbox/control-plane.js';
import { startRedis, type RedisServer } from '../sandbox/redis.js';
import { LeaderElector } from '../watcher/leader.js';
import { Watcher } from '../watcher/watcher.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const USAGE = `usage: ripple <all|watcher|worker> [options]

  all        watcher + workers + ops server in one process (the default)
  watcher    list/watch and enqueue (leader-elected; run 2 replicas)
  worker     run handlers for --functions (default: all)

Cluster (default: the local sandbox, never your current kube-context):
  --sandbox               build/start the local control plane and Redis, stop them on exit (default)
  --kubeconfig PATH       use this cluster instead (also RIPPLE_KUBECONFIG)
  --context NAME          a context of that kubeconfig
  --in-cluster            use the Pod's ServiceAccount
Other:
  --redis-url URL         Redis (also REDIS_URL; with --sandbox a local redis-server is started)
  --functions a,b         which functions' workers to run
  --ops-port N            ops server port (RIPPLE_OPS_PORT, default 8081; 0 picks a free one)`;

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      sandbox: { type: 'boolean' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'in-cluster': { type: 'boolean' },
      'redis-url': { type: 'string' },
      functions: { type: 'string' },
      'ops-port': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const mode = positionals[0] ?? 'all';
  if (!['all', 'watcher', 'worker'].includes(mode)) throw new Error(`unknown mode ${mode}\n${USAGE}`);
  const config = loadProcessConfig({ ...process.env, ...(values['ops-port'] ? { RIPPLE_OPS_PORT: values['ops-port'] } : {}) });
  const log = createLogger('ripple', config.LOG_LEVEL).child({ mode });
  const cleanups: Array<() => Promise<void>> = [];

  // Which cluster: explicit flags only; without them, the sandbox.
  const kubeconfigPath = values.kubeconfig ?? process.env.RIPPLE_KUBECONFIG;
  let target: KubeTarget;
  let controlPlane: ControlPlane | undefined;
  if (values['in-cluster']) target = { kind: 'in-cluster' };
  else if (kubeconfigPath && !values.sandbox) target = { kind: 'kubeconfig', path: kubeconfigPath, context: values.context };
  else {
    log.info('starting the local sandbox (first run builds the control plane; progress follows)');
    controlPlane = await startControlPlane({ log: (line) => log.info(line) });
    cleanups.push(() => controlPlane!.stop());
    target = { kind: 'kubeconfig', path: controlPlane.kubeconfig };
  }
  const kc = loadKubeConfig(target);

  let redisServer: RedisServer | undefined;
  let redisUrl = values['redis-url'] ?? config.REDIS_URL;
  if (!redisUrl) {
    redisServer = await startRedis({ log: (line) => log.info(line) });
    cleanups.push(() => redisServer!.stop());
    redisUrl = redisServer.url;
  }
  if (controlPlane) installCrds(controlPlane.kubeconfig, log.info.bind(log));

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = new QueueMetrics(registry);
  const namespace = config.RIPPLE_WATCH_NAMESPACE;
  const host = new FunctionHost({ kc, redisUrl, prefix: config.RIPPLE_PREFIX, functions: allFunctions(), log, metrics, namespace });
  cleanups.unshift(() => host.close());

  let watcher: Watcher | undefined;
  let elector: LeaderElector | undefined;
  if (mode === 'all' || mode === 'watcher') {
    await ensureNamespace(kc, config.RIPPLE_NAMESPACE);
    watcher = new Watcher({ kc, functions: host.functions, enqueue: (fn, key, reason) => host.enqueue(fn, key, reason), isLeader: () => elector?.isLeader() ?? false, log, namespace });
    elector = new LeaderElector({
      kc,
      namespace: config.RIPPLE_NAMESPACE,
      name: `${config.RIPPLE_PREFIX}-watcher`,
      identity: `${hostname()}-${process.pid}`,
      log,
      onStartedLeading: () => {
        void host.scheduleResyncs().catch((err: unknown) => log.error({ err: String(err) }, 'could not install resync ticks'));
        void watcher!.replayAll().then((n) => log.info({ objects: n }, 'leader: replayed the stores'));
      },
    });
    watcher.start();
    elector.start();
    cleanups.unshift(async () => {
      await elector!.stop();
      await watcher!.stop();
    });
  }
  if (mode === 'all' || mode === 'worker') host.startWorkers(values.functions?.split(',').filter(Boolean));

  const ops = await startOpsServer({
    port: config.RIPPLE_OPS_PORT,
    host: config.RIPPLE_OPS_HOST,
    registry,
    healthy: () => true,
    ready: async () => {
      const problems: string[] = [];
      try {
        await host.redis.ping();
      } catch (err) {
        problems.push(`redis: ${String(err)}`);
      }
      if (watcher && !watcher.ready(config.RIPPLE_WATCH_DOWN_BOUND_MS)) {
        for (const h of watcher.health()) if (!h.synced || h.downSince) problems.push(`watch ${h.resource}: ${h.lastError ?? 'not synced'}`);
      }
      return problems;
    },
  });
  cleanups.unshift(() => new Promise<void>((resolve) => ops.server.close(() => resolve())));
  log.info({ ops: `http://${config.RIPPLE_OPS_HOST}:${ops.port}`, kubeconfig: controlPlane?.kubeconfig, redis: redisServer?.source ?? 'REDIS_URL', functions: host.functions.map((f) => f.name) }, 'ripple is running; Ctrl-C stops it');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: finishing in-flight reconciles');
    for (const c of cleanups) {
      try {
        await c();
      } catch (err) {
        log.warn({ err: String(err) }, 'cleanup step failed');
      }
    }
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

function installCrds(kubeconfig: string, log: (msg: string) => void): void {
  const dir = path.join(root, 'infra', 'crds');
  if (!existsSync(dir)) return;
  const kubectl = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
  const r = spawnSync(kubectl, ['--kubeconfig', kubeconfig, 'apply', '--server-side', '--force-conflicts', '-f', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`installing CRDs failed: ${r.stderr}`);
  log(`installed CRDs from ${path.relative(root, dir)}`);
}

async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.readNamespace({ name });
  } catch {
    await core.createNamespace({ body: { metadata: { name } } }).catch(() => undefined);
  }
}

main().catch((err: unknown) => {
  console.error(`ripple: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
