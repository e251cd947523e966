import { randomUUID } from 'node:crypto';
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { isTerminal } from '../runtime/errors.js';
import type { Logger } from '../runtime/log.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';
import { DeadlineExceededError, withDeadline } from './deadline.js';
import type { QueueMetrics } from './metrics.js';
import { withRetries, type RetryPolicy } from './retry.js';
import { runScript } from './run-script.js';
import { CLAIM, RELEASE } from './scripts.js';
import { parseSchedule, RECONCILE_JOB, reconcileJobSchema, RESYNC_JOB, type ScheduleResult, type WorkQueue } from './work-queue.js';

/** Default bound on one reconcile (KeyedWorkerOptions.reconcileTimeoutMs). */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 5 * 60_000;

/**
 * Carrying out the follow-up after RELEASE (adding the retry/requeue/dirty job) is retried this many
 * times: RELEASE has already released the key, so if the add is lost nothing else will run it again
 * until the next event or resync. Repeating is safe: adding an existing job id is ignored.
 */
export const DEFAULT_APPLY_RETRY: RetryPolicy = { attempts: 6, baseMs: 200, maxMs: 5_000 };

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
  /**
   * How long one reconcile may run before it counts as failed (transient: retried with backoff).
   * Default 5 min; 0 disables the bound.
   */
  reconcileTimeoutMs?: number;
  /** Attempts at scheduling the follow-up after a release (default DEFAULT_APPLY_RETRY). */
  applyRetry?: RetryPolicy;
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
    const claimed = await runScript(redis, CLAIM, [k.pending, k.due, k.active, k.dirty, k.pendingSince], [key, jobId, k.jobKeyPrefix]);
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
    const timeoutMs = this.opts.reconcileTimeoutMs ?? DEFAULT_RECONCILE_TIMEOUT_MS;
    try {
      // A handler stuck on a call with no timeout of its own (client-node's typed clients set none)
      // would hold this key and a concurrency slot for ever. After the deadline the key is released and
      // retried with backoff, while the abandoned promise may still run on and finish; that is safe
      // because handlers read fresh state and write with resourceVersion preconditions, so a late write
      // from it conflicts (409) instead of overwriting what the retry wrote.
      const result = await withDeadline(this.opts.reconcile({ key, reconcileId, reason, log }), timeoutMs, () => `reconcile did not finish within ${timeoutMs} ms`);
      if (result?.requeueAfterMs !== undefined && result.requeueAfterMs >= 0) {
        outcome = 'requeue';
        requeueAfterMs = result.requeueAfterMs;
      }
    } catch (err) {
      failure = err;
      outcome = isTerminal(err) ? 'terminal' : 'error';
      if (err instanceof DeadlineExceededError) m?.reconcileTimeouts.inc({ controller: this.name });
    } finally {
      m?.activeWorkers.dec({ controller: this.name });
    }
    const seconds = (Date.now() - startedAt) / 1000;
    m?.workDuration.observe(labels, seconds);
    m?.reconcileTime.observe({ controller: this.name }, seconds);

    // Only this worker holds the key, so the failure count it reads cannot change before RELEASE
    // increments it; reading it costs a round trip on the error path only.
    const backoffMs =
      outcome === 'error' ? backoffDelay(this.opts.backoff ?? DEFAULT_BACKOFF, Number((await redis.hget(k.failures, key)) ?? 0) + 1) : 0;
    const raw = await runScript(
      redis,
      RELEASE,
      [k.pending, k.due, k.active, k.dirty, k.failures, k.seq, k.pendingSince],
      [key, jobId, outcome, String(Math.round(requeueAfterMs)), String(Math.round(backoffMs)), k.jobKeyPrefix],
    );
    const next = parseSchedule(raw);
    await this.applyFollowUp(key, next, outcome === 'error' ? 'retry' : outcome === 'requeue' ? 'requeue' : 'dirty', log);

    if (outcome === 'error') {
      const tail = (raw as string[]).slice(4);
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

  /**
   * Adds the job RELEASE decided on. Retried: the key is already released, so a lost add would leave
   * the retry, requeueAfter or dirty re-run undone until the key's next event or resync. If every
   * attempt fails the error is logged with the key; an event for the key within the pending grace
   * period adds the recorded job itself, and after it a new one is recorded, so the key never waits
   * behind a job that does not exist.
   */
  private async applyFollowUp(key: string, next: ScheduleResult, reason: string, log: Logger): Promise<void> {
    if (next.action !== 'add' && next.action !== 'reschedule') return;
    try {
      await withRetries(
        () => this.opts.queue.apply(key, next, reason),
        this.opts.applyRetry ?? DEFAULT_APPLY_RETRY,
        (err, attempt, retryInMs) => {
          if (retryInMs !== undefined) log.warn({ key, attempt, retryInMs, err: errorText(err) }, 'could not schedule the follow-up reconcile; retrying');
        },
      );
    } catch (err) {
      log.error({ key, action: next.action, jobId: next.jobId, delayMs: next.delayMs, reason, err: errorText(err) }, 'could not schedule the follow-up reconcile; the key runs again on its next event or resync');
    }
  }

  /** Graceful: finishes in-flight reconciles and takes no new ones. */
  async close(): Promise<void> {
    await this.worker.close();
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
