import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { allFunctions } from '../functions/index.js';
import { runWebhookCommand } from './webhook.js';
import { runRolloutCommand } from './rollout.js';
import { rippleVersion } from './version.js';
import { runDoctorCommand } from './doctor/command.js';
import { CLIENT_COMMANDS, CLIENT_USAGE, runClientCommand } from './ops-client.js';
import { objectSources } from './object-sources.js';
import { loadKubeConfig, type KubeTarget } from '../kube/config.js';
import { livenessProblems, readinessProblems, type HealthSources } from '../ops/health.js';
import { registerHealthMetrics } from '../ops/health-metrics.js';
import { registerObjectPhases } from '../ops/object-phases.js';
import { kubeRequest } from '../kube/raw.js';
import { instrumentKubeRequests } from '../kube/request-metrics.js';
import { Resources } from '../kube/resources.js';
import { modelServingRoleStatusReader } from '../functions/reconcile-modelserving/role-status-reader.js';
import { opsApp, startOpsServer } from '../ops/server.js';
import { QueueMetrics } from '../queue/metrics.js';
import { loadProcessConfig, processConfigSchema } from '../runtime/config.js';
import { HoldWhileUnready, serviceOfUrl } from '../runtime/dispatch-hold.js';
import { httpReconcile, parseDispatchTargets, redactUrl } from '../runtime/dispatcher.js';
import { functionModulePaths, loadFunctionModule, withFunctionModules } from '../runtime/function-modules.js';
import { FunctionHost } from '../runtime/host.js';
import { keyLeaseLeft, serveFunction } from '../runtime/http-function.js';
import { createLogger } from '../base/log.js';
import { startControlPlane, type ControlPlane } from '../sandbox/control-plane.js';
import { startRedis, type RedisServer } from '../sandbox/redis.js';
import { EMIT_EVENTS, MAX_PENDING_EVENT_REQUESTS, queueEventSink } from '../runtime/event-sink.js';
import { LeaderElector } from '../watcher/leader.js';
import { WatchMetrics } from '../watcher/metrics.js';
import { Watcher } from '../watcher/watcher.js';
import { packageRoot } from '../runtime/package-root.js';

const root = packageRoot(import.meta.url);
const MODES = ['all', 'watcher', 'worker', 'ops', 'serve'] as const;
/** `ripple serve`'s linger after its drain (ServeOptions.lingerMs): Node's Keep-Alive hint is 5 s. */
const SERVE_LINGER_MS = 6_000;
type Mode = (typeof MODES)[number];
const USAGE = `usage: ripple <${MODES.join('|')}> [options]     (mode also from RIPPLE_MODE)

  all        watcher + workers + ops server in one process (the default)
  watcher    list/watch and enqueue (leader-elected; run 2 replicas)
  worker     run handlers for --functions (default: all), and/or dispatch --dispatch functions over HTTP
  ops        the ops server alone: dashboard, manual resync, queue metrics, role datastore
  serve      one function (--function NAME) as an HTTP service on PORT (default 8080): Knative, OpenFaaS
  webhook    admission webhooks over HTTPS, registered on the cluster (ripple webhook --help)
  rollout    history|undo modelserving/NAME: ModelServing rollback (ripple rollout --help)
  doctor     check a cluster before and after install: foreign CRDs, webhooks, controllers, Redis (ripple doctor --help)
  --version  print Ripple's version (also -V)

Cluster (default: the local sandbox, never your current kube-context):
  --sandbox               build/start the local control plane and Redis, stop them on exit (default)
  --kubeconfig PATH       use this cluster instead (also RIPPLE_KUBECONFIG)
  --context NAME          a context of that kubeconfig
  --in-cluster            use the Pod's ServiceAccount (also RIPPLE_IN_CLUSTER=true)
Other:
  --redis-url URL         Redis (also REDIS_URL or REDIS_URL_FILE; with --sandbox a local redis-server is started)
  --functions a,b         worker: which functions' handlers to run in-process
  --dispatch fn=URL       worker: take fn's jobs from its queue and POST them to URL (repeatable)
  --hold-until-ready      with --dispatch: each URL names a Service (<svc>.<ns>.svc…); hold its function's jobs in
                          the queue, spending no retry, while the Service has no ready endpoint (functions on plain
                          Kubernetes scaled to zero; Knative's activator holds calls itself)
  --function NAME         serve: the function to serve (also RIPPLE_FUNCTION)
  --port N                serve: the HTTP port (PORT, default 8080)
  --ops-port N            ops server port (RIPPLE_OPS_PORT, default 8081; 0 picks a free one)
  --functions-module PATH run the functions a module exports (\`definitions(env)\`) beside the built-in ones
                          (repeatable; also RIPPLE_FUNCTIONS_MODULES=a.js,b.js; docs/writing-a-function.md)
  --definitions MODULE    run the functions a module exports instead of the built-in ones (tests, benches)

Security: state-changing ops routes need RIPPLE_OPS_TOKEN (Bearer); without it they answer 403.
RIPPLE_FUNCTION_TOKEN is required by \`serve\` (unless RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true) and sent by the dispatcher.

${CLIENT_USAGE}`;

async function main(): Promise<void> {
  // status, roles, resync: a client of a running ops server, with options of its own; it starts nothing.
  const first = process.argv[2];
  if (first === '--version' || first === '-V') {
    console.log(rippleVersion());
    return;
  }
  if (first && (CLIENT_COMMANDS as readonly string[]).includes(first)) {
    console.log(await runClientCommand(process.argv.slice(2)));
    return;
  }
  // webhook: the admission webhook server, with options of its own (cli/webhook.ts); no Redis, no queues.
  // RIPPLE_MODE=webhook: a platform that runs the image without arguments (OpenFaaS).
  if (process.argv[2] === 'webhook') return runWebhookCommand(process.argv.slice(3));
  // doctor: checks a cluster (and Redis) before and after installing Ripple; starts nothing (cli/doctor/).
  if (process.argv[2] === 'doctor') return runDoctorCommand(process.argv.slice(3));
  // rollout: a kubectl-like client of the API server (cli/rollout.ts); starts nothing.
  if (process.argv[2] === 'rollout') return void console.log(await runRolloutCommand(process.argv.slice(3)));
  // In function mode: the other mode generates certificates and registers itself, which a platform's function cannot.
  // A value the schema refuses falls through to loadProcessConfig, which says what is wrong with it.
  if (process.argv[2] === undefined && processConfigSchema.shape.RIPPLE_MODE.safeParse(process.env.RIPPLE_MODE || undefined).data === 'webhook') {
    return runWebhookCommand(['--function']);
  }
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      sandbox: { type: 'boolean' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'in-cluster': { type: 'boolean' },
      'redis-url': { type: 'string' },
      functions: { type: 'string' },
      dispatch: { type: 'string', multiple: true },
      'hold-until-ready': { type: 'boolean' },
      function: { type: 'string' },
      port: { type: 'string' },
      'ops-port': { type: 'string' },
      definitions: { type: 'string' },
      'functions-module': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const config = loadProcessConfig({
    ...process.env,
    ...(values['ops-port'] ? { RIPPLE_OPS_PORT: values['ops-port'] } : {}),
    ...(values.port ? { PORT: values.port } : {}),
  });
  const modeArg = positionals[0] ?? config.RIPPLE_MODE ?? 'all';
  if (!(MODES as readonly string[]).includes(modeArg)) throw new Error(`unknown mode ${modeArg}\n${USAGE}`);
  const mode = modeArg as Mode;
  const functionName = values.function ?? config.RIPPLE_FUNCTION;
  const log = createLogger('ripple', config.LOG_LEVEL).child({ mode });
  // Every process of one installation must load the same modules: the watcher enqueues for the functions it
  // knows, the workers and `serve` run them (the chart sets RIPPLE_FUNCTIONS_MODULES on all of them).
  const functions = await withFunctionModules(values.definitions ? await loadFunctionModule(values.definitions) : allFunctions(), functionModulePaths(values['functions-module']));
  const dispatch = parseDispatchTargets(values.dispatch ?? []);
  const inProcess = values.functions?.split(',').filter(Boolean);
  if (dispatch.length > 0 && mode !== 'worker') throw new Error('--dispatch is a worker option: ripple worker --dispatch fn=URL');
  if (values['hold-until-ready'] && dispatch.length === 0) throw new Error('--hold-until-ready holds dispatched functions: give --dispatch fn=URL too');
  const holdServices = new Map(dispatch.map((t) => [t.fn, values['hold-until-ready'] ? serviceOfUrl(t.url) : undefined]));
  for (const t of dispatch) {
    if (values['hold-until-ready'] && !holdServices.get(t.fn)) throw new Error(`--hold-until-ready: --dispatch ${t.fn}'s URL names no Service by its cluster name (http://<service>.<namespace>.svc.cluster.local…)`);
  }
  for (const t of dispatch) {
    if (!functions.some((f) => f.name === t.fn)) throw new Error(`--dispatch ${t.fn}: unknown function; known: ${functions.map((f) => f.name).join(', ')}`);
    if (inProcess?.includes(t.fn)) throw new Error(`${t.fn} is both in --functions and --dispatch: run it one way`);
  }
  if (mode === 'serve' && !functionName) throw new Error('serve needs --function NAME (or RIPPLE_FUNCTION)');

  // Which cluster: explicit flags only; without them, the sandbox.
  const cleanups: Array<() => Promise<void>> = [];
  const kubeconfigPath = values.kubeconfig ?? process.env.RIPPLE_KUBECONFIG;
  let target: KubeTarget;
  let controlPlane: ControlPlane | undefined;
  if (values['in-cluster']) target = { kind: 'in-cluster' };
  else if (kubeconfigPath && !values.sandbox) target = { kind: 'kubeconfig', path: kubeconfigPath, context: values.context };
  else if (config.RIPPLE_IN_CLUSTER === 'true' && !values.sandbox) target = { kind: 'in-cluster' };
  else {
    log.info('starting the local sandbox (first run builds the control plane; progress follows)');
    // The owner: should this process die without stopping the sandbox, the next start stops it.
    controlPlane = await startControlPlane({ log: (line) => log.info(line), owner: true });
    cleanups.push(() => controlPlane!.stop());
    target = { kind: 'kubeconfig', path: controlPlane.kubeconfig };
  }
  const kc = loadKubeConfig(target);

  let redisServer: RedisServer | undefined;
  let redisUrl = values['redis-url'] ?? config.REDIS_URL;
  if (!redisUrl) {
    redisServer = await startRedis({ log: (line) => log.info(line), ownSession: true });
    cleanups.push(() => redisServer!.stop());
    if (redisServer.pid !== undefined) controlPlane?.recordProcess('redis-server', redisServer.pid);
    redisUrl = redisServer.url;
  }
  if (controlPlane) installCrds(controlPlane.kubeconfig, log.info.bind(log));

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = new QueueMetrics(registry);
  instrumentKubeRequests(kc, registry);
  const namespace = config.RIPPLE_WATCH_NAMESPACE;
  // Function metrics (wva_*) are global values read from Redis: only the processes serving the ops
  // control surface export them, so summing a metric over pods does not count it once per pod.
  const functionMetrics = mode === 'all' || mode === 'ops';
  const host = new FunctionHost({ kc, redisUrl, prefix: config.RIPPLE_PREFIX, functions, log, metrics, functionMetrics, namespace });
  // Shutdown runs these in order: stop producing work, drain the workers, then close what serves
  // probes last so the kubelet sees a live process for the whole drain.
  const stopProducing: Array<() => Promise<void>> = [];
  const stopServing: Array<() => Promise<void>> = [];

  let servePort: number | undefined;
  if (mode === 'serve') {
    const def = host.definition(functionName!);
    const served = await serveFunction({
      def,
      run: (info) => host.runHandler(def, info),
      redis: host.redis,
      prefix: host.prefix,
      log,
      token: config.RIPPLE_FUNCTION_TOKEN,
      maxInflight: config.RIPPLE_MAX_INFLIGHT,
      ready: () => readinessProblems({ redis: host.redis, watchDownBoundMs: 0, watchStallBoundMs: 0 }),
      registry,
      metrics,
      port: config.PORT,
      hostname: config.RIPPLE_SERVE_HOST,
      // Past Node's 5 s Keep-Alive hint: the dispatcher's connections are closed by the dispatcher, never under a call.
      lingerMs: SERVE_LINGER_MS,
    });
    servePort = served.port;
    stopProducing.push(() => served.close());
    log.info(
      { url: `http://${config.RIPPLE_SERVE_HOST}:${served.port}`, function: def.name, service: process.env.K_SERVICE, revision: process.env.K_REVISION, token: config.RIPPLE_FUNCTION_TOKEN ? 'required' : 'none' },
      'serving the function over HTTP',
    );
  }

  let watcher: Watcher | undefined;
  let elector: LeaderElector | undefined;
  // The watchers' Lease: its holder enqueues; status and metrics name it.
  const leaseName = `${config.RIPPLE_PREFIX}-watcher`;
  if (mode === 'all' || mode === 'watcher') {
    await ensureNamespace(kc, config.RIPPLE_NAMESPACE);
    watcher = new Watcher({
      kc,
      functions: host.functions,
      enqueue: (fn, key, reason, resourceVersion) => host.enqueue(fn, key, reason, 0, resourceVersion),
      enqueueMany: (fn, keys, reason, resourceVersions) => host.enqueueMany(fn, keys, reason, resourceVersions),
      isLeader: () => elector?.isLeader() ?? false,
      log,
      namespace,
      metrics: new WatchMetrics(registry),
      // A dead-lettered watch event is reported as a Warning Event on its object, through emit-events.
      events: queueEventSink(host.redis, host.prefix, () => host.queue(EMIT_EVENTS), Date.now, MAX_PENDING_EVENT_REQUESTS, { log, registry }),
    });
    elector = new LeaderElector({
      kc,
      namespace: config.RIPPLE_NAMESPACE,
      name: leaseName,
      identity: `${hostname()}-${process.pid}`,
      log,
      onStartedLeading: () => {
        void host.scheduleResyncs().catch((err: unknown) => log.error({ err: String(err) }, 'could not install resync ticks'));
        // replayAll retries each object and never rejects; the catch is a last guard, because an
        // unhandled rejection would end the process on Node 20.
        void watcher!
          .replayAll()
          .then((n) => log.info({ objects: n }, 'leader: replayed the stores'))
          .catch((err: unknown) => log.error({ err: String(err) }, 'leader: replaying the stores failed'));
      },
    });
    watcher.start();
    elector.start();
    stopProducing.push(async () => {
      await elector!.stop();
      await watcher!.stop();
    });
  }
  if (mode === 'all') host.startWorkers(inProcess);
  if (mode === 'worker') {
    if (inProcess?.length || dispatch.length === 0) host.startWorkers(inProcess);
    if (dispatch.length > 0) {
      const urls = new Map(dispatch.map((t) => [t.fn, t.url]));
      // Filled right after the workers start, before their first fetch (BullMQ's run loop starts on the next tick).
      const holds = new Map<string, HoldWhileUnready>();
      const workers = host.startWorkers(
        dispatch.map((t) => t.fn),
        {
          via: (def) =>
            httpReconcile({
              fn: def.name,
              url: urls.get(def.name)!,
              token: config.RIPPLE_FUNCTION_TOKEN,
              timeoutMs: config.RIPPLE_DISPATCH_TIMEOUT_MS,
              leaseLeft: (key) => keyLeaseLeft(host.redis, host.prefix, def.name, key),
              ...(holdServices.get(def.name) ? { onUndelivered: () => holds.get(def.name)?.refused() } : {}),
            }),
        },
      );
      for (const [fn, service] of holdServices) {
        const worker = workers.get(fn);
        if (!service || !worker) continue;
        const hold = new HoldWhileUnready({ kc, service, target: worker, log: log.child({ function: fn }) });
        holds.set(fn, hold);
        stopProducing.push(() => hold.stop());
      }
      log.info({ dispatch: dispatch.map((t) => ({ function: t.fn, url: redactUrl(t.url) })), timeoutMs: config.RIPPLE_DISPATCH_TIMEOUT_MS }, 'dispatching over HTTP');
    }
  }

  let opsPort: number | undefined;
  if (mode !== 'serve') {
    const sources: HealthSources = {
      redis: host.redis,
      watcher,
      workersRunning: mode === 'all' || mode === 'worker' ? () => host.workersRunning() : undefined,
      watchDownBoundMs: config.RIPPLE_WATCH_DOWN_BOUND_MS,
      watchStallBoundMs: config.RIPPLE_WATCH_STALL_BOUND_MS,
    };
    const control =
      mode === 'all' || mode === 'ops'
        ? {
            host,
            token: config.RIPPLE_OPS_TOKEN,
            roles: modelServingRoleStatusReader(host.redis, host.prefix),
            objects: objectSources({ kc, redis: host.redis, prefix: host.prefix, namespace }),
            log,
            // What `ripple status` shows of this process besides the queues.
            process: {
              mode,
              watches: watcher ? () => watcher!.health() : undefined,
              leader: elector ? { lease: leaseName, isLeader: () => elector!.isLeader() } : undefined,
              workers: mode === 'all' ? { functions: inProcess ?? host.functions.map((f) => f.name), running: () => host.workersRunning() } : undefined,
            },
          }
        : undefined;
    // What the alert rules (infra/alerts/) read: Redis, watches, leadership, and the objects' phases.
    registerHealthMetrics(registry, {
      redis: host.redis,
      watcher,
      watchDownBoundMs: watcher ? config.RIPPLE_WATCH_DOWN_BOUND_MS : undefined,
      leader: elector ? { name: leaseName, isLeader: () => elector!.isLeader() } : undefined,
    });
    if (control) {
      const phased = [Resources.modelServing.kind, Resources.variantAutoscaling.kind] as string[];
      const resources = host.functions.flatMap((f) => (f.primary && phased.includes(f.primary.kind) ? [f.primary] : []));
      registerObjectPhases(registry, { resources, namespace, get: (p, query) => kubeRequest(kc, p, { query, timeoutMs: 5_000 }) });
    }
    const app = opsApp({ registry, live: () => livenessProblems(sources), ready: () => readinessProblems(sources), control });
    const ops = await startOpsServer({ app, port: config.RIPPLE_OPS_PORT, host: config.RIPPLE_OPS_HOST });
    opsPort = ops.port;
    stopServing.push(() => ops.close());
    if (control && !control.token) log.warn('RIPPLE_OPS_TOKEN is not set: manual resync and the writable dashboard are disabled');
  }

  log.info(
    {
      ops: opsPort === undefined ? undefined : `http://${config.RIPPLE_OPS_HOST}:${opsPort}`,
      kubeconfig: controlPlane?.kubeconfig,
      redis: redisServer?.source ?? 'REDIS_URL',
      functions: host.functions.map((f) => f.name),
    },
    'ripple is running; Ctrl-C stops it',
  );
  // Lets a parent process (tests, supervisors) know start-up is over, with the ports it got.
  process.send?.({ ready: true, opsPort, port: servePort });

  const run = async (steps: Array<() => Promise<void>>) => {
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        log.warn({ err: String(err) }, 'cleanup step failed');
      }
    }
  };
  let stoppingSince: number | undefined;
  const stop = async (signal: string) => {
    if (stoppingSince !== undefined) {
      // One Ctrl-C arrives twice under npm: the terminal signals the whole process group and npm
      // forwards it to its child as well. Only a later signal is a person insisting.
      if (Date.now() - stoppingSince < 1_000) return;
      log.warn({ signal }, 'second signal: not waiting for in-flight reconciles; stopping what this process started');
      await run(cleanups);
      process.exit(1);
    }
    stoppingSince = Date.now();
    log.info({ signal }, 'stopping: finishing in-flight reconciles');
    await run([...stopProducing, () => host.close(), ...stopServing, ...cleanups]);
    log.info('stopped');
    process.exit(0);
  };
  // SIGHUP: the terminal was closed or the SSH session dropped; what this process started must not outlive it.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(signal));
}

function installCrds(kubeconfig: string, log: (msg: string) => void): void {
  const dir = path.join(root, 'infra', 'crds');
  if (!existsSync(dir)) return;
  const kubectl = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
  const r = spawnSync(kubectl, ['--kubeconfig', kubeconfig, 'apply', '--server-side', '--force-conflicts', '-f', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`installing CRDs failed: ${r.stderr}`);
  log(`installed CRDs from ${path.relative(root, dir)}`);
}

// In a cluster the namespace exists and the watcher's RBAC cannot read namespaces; both failures are fine.
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
