import { randomUUID } from 'node:crypto';
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { isTerminal } from '../runtime/errors.js';
import type { Logger } from '../runtime/log.js';
import { DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';
import type { QueueMetrics } from './metrics.js';
import { runScript } from './run-script.js';
import { CLAIM, RELEASE } from './scripts.js';
import { parseSchedule, RECONCILE_JOB, reconcileJobSchema, RESYNC_JOB, type WorkQueue } from './work-queue.js';

/** What one reconcile asks of the queue afterwards. */
export interface ReconcileOutcome {
  /** Reconcile this key again after this many ms (an earlier request for the key wins). */
  requeueAfterMs?: number;
}

export interface ReconcileInfo {
  key: string;
  reconcileId: string;
  reason: string;
  log: Logger;
}

export interface KeyedWorkerOptions {
  queue: WorkQueue;
  /** A connection of its own: BullMQ workers block on Redis. */
  connection: Redis;
  prefix?: string;
  concurrency?: number;
  backoff?: BackoffPolicy;
  /** BullMQ lock: how long a dead worker's job stays claimed before another worker takes it over. */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  metrics?: QueueMetrics;
  log: Logger;
  reconcile: (info: ReconcileInfo) => Promise<ReconcileOutcome | void>;
  /** Called for the resync tick's job: enqueue every primary object. */
  resync?: (log: Logger) => Promise<number>;
}

/**
 * The consumer side: runs `reconcile` for each key, never for one key in two places at once, and
 * schedules what follows (dirty re-run, backoff retry, requeueAfter) atomically on release.
 */
export class KeyedWorker {
  readonly worker: Worker;
  private readonly name: string;

  constructor(private readonly opts: KeyedWorkerOptions) {
    this.name = opts.queue.name;
    const concurrency = opts.concurrency ?? 1;
    opts.metrics?.maxConcurrent.set({ controller: this.name }, concurrency);
    this.worker = new Worker(this.name, (job: Job) => this.process(job), {
      connection: opts.connection,
      prefix: opts.prefix ?? 'ripple',
      concurrency,
      lockDuration: opts.lockDurationMs ?? 30_000,
      stalledInterval: opts.stalledIntervalMs ?? 30_000,
      // A job that stalls (its worker died) must come back, not fail: failing it would drop the key's
      // pending work until the next resync. Handlers are idempotent, so re-running is safe.
      maxStalledCount: 1000,
      autorun: true,
    });
    this.worker.on('error', (err) => opts.log.error({ err: String(err) }, 'worker error'));
  }

  private async process(job: Job): Promise<string> {
    if (job.name === RESYNC_JOB) {
      const n = (await this.opts.resync?.(this.opts.log)) ?? 0;
      return `resync enqueued ${n}`;
    }
    if (job.name !== RECONCILE_JOB) throw new Error(`unknown job name ${job.name}`);
    const { key, reason } = reconcileJobSchema.parse(job.data);
    const jobId = String(job.id);
    const k = this.opts.queue.keys;
    const redis = this.opts.connection;
    const claimed = await runScript(redis, CLAIM, [k.pending, k.due, k.active, k.dirty], [key, jobId, k.jobKeyPrefix]);
    const m = this.opts.metrics;
    const labels = { name: this.name, controller: this.name };
    if (claimed !== 1) {
      m?.reconcileTotal.inc({ controller: this.name, result: 'skipped' });
      return 'skipped: key is being reconciled elsewhere; it will run again after';
    }
    const reconcileId = randomUUID();
    const log = this.opts.log.child({ function: this.name, key, reconcileId });
    const startedAt = Date.now();
    m?.queueDuration.observe(labels, Math.max(0, startedAt - job.timestamp - (job.opts.delay ?? 0)) / 1000);
    m?.activeWorkers.inc({ controller: this.name });
    let outcome: 'success' | 'terminal' | 'error' | 'requeue' = 'success';
    let requeueAfterMs = 0;
    let failure: unknown;
    try {
      const result = await this.opts.reconcile({ key, reconcileId, reason, log });
      if (result?.requeueAfterMs !== undefined && result.requeueAfterMs >= 0) {
        outcome = 'requeue';
        requeueAfterMs = result.requeueAfterMs;
      }
    } catch (err) {
      failure = err;
      outcome = isTerminal(err) ? 'terminal' : 'error';
    } finally {
      m?.activeWorkers.dec({ controller: this.name });
    }
    const seconds = (Date.now() - startedAt) / 1000;
    m?.workDuration.observe(labels, seconds);
    m?.reconcileTime.observe({ controller: this.name }, seconds);

    const backoff = this.opts.backoff ?? DEFAULT_BACKOFF;
    const raw = await runScript(
      redis,
      RELEASE,
      [k.pending, k.due, k.active, k.dirty, k.failures, k.seq],
      [key, jobId, outcome, String(Math.round(requeueAfterMs)), String(backoff.baseMs), String(backoff.maxMs), k.jobKeyPrefix],
    );
    const next = parseSchedule(raw);
    await this.opts.queue.apply(key, next, outcome === 'error' ? 'retry' : outcome === 'requeue' ? 'requeue' : 'dirty');

    if (outcome === 'error') {
      const tail = (raw as string[]).slice(3);
      m?.retries.inc(labels);
      m?.reconcileErrors.inc({ controller: this.name });
      m?.reconcileTotal.inc({ controller: this.name, result: 'error' });
      log.warn({ err: errorText(failure), failures: Number(tail[0]), backoffMs: Number(tail[1]) }, 'reconcile failed; retrying with backoff');
      throw failure instanceof Error ? failure : new Error(errorText(failure));
    }
    if (outcome === 'terminal') {
      m?.terminalErrors.inc({ controller: this.name });
      m?.reconcileErrors.inc({ controller: this.name });
      m?.reconcileTotal.inc({ controller: this.name, result: 'error' });
      log.warn({ err: errorText(failure) }, 'reconcile failed terminally; not retrying');
      throw failure instanceof Error ? failure : new Error(errorText(failure));
    }
    m?.reconcileTotal.inc({ controller: this.name, result: outcome === 'requeue' ? 'requeue_after' : 'success' });
    log.debug({ requeueAfterMs: outcome === 'requeue' ? requeueAfterMs : undefined, ms: Math.round(seconds * 1000) }, 'reconciled');
    return outcome;
  }

  /** Graceful: finishes in-flight reconciles and takes no new ones. */
  async close(): Promise<void> {
    await this.worker.close();
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
