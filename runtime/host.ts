import type { KubeConfig } from '@kubernetes/client-node';
import { fencedStateWriter, plainStateWriter } from '../queue/fenced-write.js';
import { createRedis, type RedisClient } from '../queue/connection.js';
import { listSchema } from '../kube/object.js';
import { isStatus, kubeRequest } from '../kube/raw.js';
import { collectionPath, objectPath } from '../kube/resources.js';
import { objectKey, parseObjectKey } from '../queue/keys.js';
import type { QueueMetrics } from '../queue/metrics.js';
import { ensureResyncInterval, upsertResync } from '../queue/resync.js';
import { KeyedWorker, type KeyedWorkerOptions, type ReconcileInfo, type ReconcileOutcome } from '../queue/worker.js';
import { WorkQueue, type ScheduleResult } from '../queue/work-queue.js';
import { EMIT_EVENTS, MAX_PENDING_EVENT_REQUESTS, queueEventSink } from './event-sink.js';
import type { FunctionDefinition, HandlerContext } from './function.js';
import type { Logger } from '../base/log.js';

export interface HostOptions {
  kc: KubeConfig;
  redisUrl: string;
  /** Redis key prefix for every queue and datastore key (default `ripple`). */
  prefix?: string;
  functions: FunctionDefinition[];
  log: Logger;
  metrics?: QueueMetrics;
  /**
   * Register each function's own metrics (its `metrics` hook, e.g. the autoscaler's wva_* gauges) on
   * `metrics.registry`. Their values are global — read from Redis at scrape time — so exactly the
   * processes that serve the ops control surface should export them (the CLI: modes `all` and `ops`);
   * were every pod to export them, an HPA summing an External metric over its series would multiply
   * the desired replicas by the number of pods. The CLI always sets this; when unset, it follows
   * whether `metrics` is given (a single process embedding the host, as the tests do).
   */
  functionMetrics?: boolean;
  env?: Readonly<Record<string, string | undefined>>;
  /** How fast a dead worker's job is taken over (BullMQ lock); tests shorten it. */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** Reconcile only objects in this namespace (the watcher gets the same); default all. */
  namespace?: string;
}

/**
 * Owns the queues of every known function and runs chosen functions' handlers as BullMQ workers.
 * The watcher, the workers and the ops server all enqueue through it.
 */
export class FunctionHost {
  readonly prefix: string;
  readonly redis: RedisClient;
  private readonly queues = new Map<string, WorkQueue>();
  private readonly workers: KeyedWorker[] = [];
  private readonly extraConnections: RedisClient[] = [];
  private closing = false;

  constructor(private readonly opts: HostOptions) {
    this.prefix = opts.prefix ?? 'ripple';
    this.redis = createRedis(opts.redisUrl, { maxRetriesPerRequest: null });
    if (opts.metrics && (opts.functionMetrics ?? true)) {
      for (const f of opts.functions) f.metrics?.(opts.metrics.registry, { redis: this.redis, prefix: this.prefix, env: opts.env ?? process.env });
    }
  }

  get functions(): FunctionDefinition[] {
    return this.opts.functions;
  }

  definition(name: string): FunctionDefinition {
    const def = this.opts.functions.find((f) => f.name === name);
    if (!def) throw new Error(`unknown function ${name}; known: ${this.opts.functions.map((f) => f.name).join(', ')}`);
    return def;
  }

  queue(name: string): WorkQueue {
    let q = this.queues.get(name);
    if (!q) {
      q = new WorkQueue({ name, connection: this.redis, prefix: this.prefix, metrics: this.opts.metrics, log: this.opts.log });
      this.queues.set(name, q);
    }
    return q;
  }

  allQueues(): WorkQueue[] {
    for (const f of this.opts.functions) this.queue(f.name);
    return [...this.queues.values()];
  }

  /**
   * `resourceVersion`: the version of the key's own object whose watch event asks for this (the watcher passes
   * it for events of a function's primary resource); the run it wakes gets the highest as minResourceVersion.
   */
  async enqueue(fn: string, key: string, reason: string, delayMs = 0, resourceVersion?: string): Promise<void> {
    await this.queue(fn).add(key, delayMs, reason, resourceVersion);
  }

  /** Many keys at once, in pipelines (WorkQueue.addMany): the watcher's replay on taking over. */
  async enqueueMany(fn: string, keys: string[], reason: string, resourceVersions?: ReadonlyArray<string | undefined>): Promise<void> {
    await this.queue(fn).addMany(keys, reason, resourceVersions);
  }

  /**
   * Runs one function's handler for one key with the same context a worker gives it. Workers and the
   * HTTP function transport both call this, so a handler cannot tell how it was invoked.
   */
  runHandler(def: FunctionDefinition, info: Pick<ReconcileInfo, 'key' | 'reason' | 'log'> & Partial<Pick<ReconcileInfo, 'token' | 'signal' | 'minResourceVersion'>>): Promise<ReconcileOutcome | void> {
    const woken = info.minResourceVersion !== undefined ? { minResourceVersion: info.minResourceVersion } : {};
    // The worker builds the reconcile's logger and signal on first use; so does the context (see context()).
    return def.reconcile({ key: info.key, reason: info.reason, ...parseObjectKey(info.key), ...woken }, this.context(() => info.log, info, def.name));
  }

  /**
   * Starts workers for the named functions (all when none are named). `via` replaces the in-process
   * handler with another reconcile (the dispatcher's HTTP call); claim, release and backoff stay the
   * KeyedWorker's, so the queue contracts hold either way. Returns the workers it started, by function.
   */
  startWorkers(names?: string[], opts: { via?: (def: FunctionDefinition) => KeyedWorkerOptions['reconcile'] } = {}): Map<string, KeyedWorker> {
    const defs = names?.length ? names.map((n) => this.definition(n)) : this.opts.functions;
    const started = new Map<string, KeyedWorker>();
    for (const def of defs) {
      const queue = this.queue(def.name);
      const connection = createRedis(this.opts.redisUrl, { maxRetriesPerRequest: null });
      this.extraConnections.push(connection);
      const worker = new KeyedWorker({
        queue,
        connection,
        prefix: this.prefix,
        concurrency: def.concurrency ?? 4,
        lockDurationMs: this.opts.lockDurationMs,
        stalledIntervalMs: this.opts.stalledIntervalMs,
        metrics: this.opts.metrics,
        reconcileTimeoutMs: def.reconcileTimeoutMs,
        // The worker binds the function's name itself (once, for its lines and its reconciles').
        log: this.opts.log,
        reconcile: opts.via?.(def) ?? ((info) => this.runHandler(def, info)),
        resync: () => this.resync(def.name),
      });
      this.workers.push(worker);
      started.set(def.name, worker);
      this.opts.log.info({ function: def.name, concurrency: def.concurrency ?? 4, dispatched: opts.via !== undefined }, 'worker started');
    }
    return started;
  }

  /** Installs (or updates) every function's resync tick. Safe to call from every replica. */
  async scheduleResyncs(): Promise<void> {
    for (const def of this.opts.functions) {
      if (def.primary || def.resyncKeys) await upsertResync(this.queue(def.name), def.resyncIntervalMs ?? 60_000);
    }
  }

  /** True while every started worker is running (for readiness). */
  workersRunning(): boolean {
    return !this.closing && this.workers.every((w) => w.worker.isRunning());
  }

  /**
   * Enqueues every primary object of a function (or its `resyncKeys`); returns how many. `onEnqueued`
   * sees each key (the ops API reports them). Then runs the function's `sweep`: with a primary, only
   * after every page of the list arrived (a partial list would make live objects look deleted), with
   * `gone` answering from that list plus a fresh GET; without one, with nothing ever `gone` (emit-events
   * bounds its state by age). A failed sweep is logged and retried by the next tick; it never undoes
   * the enqueues.
   */
  async resync(fn: string, reason = 'resync', onEnqueued?: (key: string, result: ScheduleResult) => void): Promise<number> {
    const def = this.definition(fn);
    const deps = { redis: this.redis, prefix: this.prefix, env: this.opts.env ?? process.env };
    const log = this.opts.log.child({ function: fn, reason });
    let n = 0;
    if (def.resyncKeys) {
      const keys = await def.resyncKeys(deps);
      // In pipelines (WorkQueue.addMany): a resync of 1,000 keys is two round trips, not 1,000.
      const results = await this.queue(fn).addMany(keys, reason);
      keys.forEach((key, i) => onEnqueued?.(key, results[i]!));
      n = keys.length;
    }
    const primary = def.primary;
    // The primaries are listed to enqueue them (no resyncKeys) and/or to know which are live (sweep).
    let live: Set<string> | undefined;
    if (primary && (!def.resyncKeys || def.sweep)) {
      live = new Set<string>();
      let cont: string | undefined;
      do {
        const page = listSchema.parse(await kubeRequest(this.opts.kc, collectionPath(primary, this.opts.namespace), { query: { limit: 500, continue: cont, labelSelector: def.primaryLabelSelector } }));
        const keys = page.items.map((item) => objectKey(item.metadata.namespace, item.metadata.name));
        for (const key of keys) live.add(key);
        if (!def.resyncKeys) {
          // One page (up to 500 objects) in one pipeline (WorkQueue.addMany).
          const results = await this.queue(fn).addMany(keys, reason);
          keys.forEach((key, i) => onEnqueued?.(key, results[i]!));
          n += keys.length;
        }
        cont = page.metadata.continue || undefined;
      } while (cont);
    }
    if (!def.sweep) return n;
    const listed = live;
    const gone = async (key: string): Promise<boolean> => {
      if (!primary || !listed || listed.has(key)) return false;
      const { namespace, name } = parseObjectKey(key);
      // Only keys this host listed: another namespace's objects were never in the list.
      if (primary.namespaced !== (namespace !== undefined)) return false;
      if (this.opts.namespace !== undefined && namespace !== this.opts.namespace) return false;
      try {
        await kubeRequest(this.opts.kc, objectPath(primary, namespace, name));
        return false;
      } catch (err) {
        if (isStatus(err, 404)) return true;
        throw err;
      }
    };
    try {
      const swept = await def.sweep({ ...deps, kc: this.opts.kc, log, gone });
      if (swept > 0) log.info({ swept }, 'swept the state of objects that no longer exist');
    } catch (err) {
      log.error({ err: String(err) }, 'sweeping the state of deleted objects failed; the next resync tick tries again');
    }
    return n;
  }

  /**
   * A handler's context; `claim` is the queue claim it runs under (none outside a worker: never aborted). `log`
   * may be given as a function: it is then called when the handler first logs, and the claim's signal is
   * read when the handler first looks at it, so a reconcile that does neither builds neither (queue/worker.ts).
   * With a key and a token, state writes are fenced by that claim of function `fn`; without, they are plain.
   */
  context(log: Logger | (() => Logger), claim: Partial<Pick<ReconcileInfo, 'token' | 'signal' | 'key'>> = {}, fn = 'unclaimed'): HandlerContext {
    const logger = typeof log === 'function' ? log : () => log;
    let unclaimed: AbortSignal | undefined;
    return {
      state:
        claim.token && claim.key !== undefined
          ? fencedStateWriter(this.redis, this.prefix, fn, claim.key, claim.token)
          : plainStateWriter(this.redis, this.prefix, fn),
      get signal() {
        return claim.signal ?? (unclaimed ??= new AbortController().signal);
      },
      token: claim.token ?? '',
      kc: this.opts.kc,
      redis: this.redis,
      prefix: this.prefix,
      get log() {
        return logger();
      },
      now: () => new Date(),
      // A request dropped over the cap is logged with this reconcile's context and counted.
      events: queueEventSink(this.redis, this.prefix, () => this.queue(EMIT_EVENTS), Date.now, MAX_PENDING_EVENT_REQUESTS, {
        get log() {
          return logger();
        },
        registry: this.opts.metrics?.registry,
      }),
      enqueue: (fn, key, delayMs) => this.enqueue(fn, key, 'handler', delayMs),
      // Through the host's queue, so a handler builds no BullMQ Queue of its own per call.
      setResyncInterval: (fn, everyMs) => ensureResyncInterval(this.queue(fn), everyMs),
      env: this.opts.env ?? process.env,
    };
  }

  /** Graceful: workers finish in-flight reconciles, then connections close. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.workers.splice(0).map((w) => w.close()));
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
    for (const c of this.extraConnections.splice(0)) c.disconnect();
    this.redis.disconnect();
  }
}
