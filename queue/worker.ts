import { randomUUID } from 'node:crypto';
import { DelayedError, raw2NextJobData, UnrecoverableError, Worker, type Job } from 'bullmq';
import { z } from 'zod';
import { isTerminal } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { inReconcileScope, LeaseLostError, type ReconcileScope } from '../base/reconcile-scope.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';
import { DeadlineExceededError } from './deadline.js';
import type { RedisClient } from './connection.js';
import { queuePrefix, SCRIPT_KEY_COUNT } from './keys.js';
import { ClaimLease, queueRenewal } from './lease.js';
import type { QueueMetrics } from './metrics.js';
import { withRetries, type RetryPolicy } from './retry.js';
import { runScript } from './run-script.js';
import { claimReply, fetchReply, finishReply, releaseReply, type ClaimVerdictName, type FetchedClaimReply } from './script-replies.js';
import { BULL_FINISH_KEYS, BULL_MOVE_TO_ACTIVE_KEYS, finishAddKeys } from './bull-scripts.js';
import { CLAIM, MOVE_TO_ACTIVE_AND_CLAIM, RELEASE, RELEASE_AND_FINISH, RENEW } from './scripts.js';
import { sweepQueue } from './sweep.js';
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
  /**
   * Nothing ran: the reconcile was never delivered (the dispatcher's function had no replica to take the call). The
   * key comes back after requeueAfterMs (0: as soon as the worker takes work again), and neither its failure count
   * nor its backoff changes: waiting for a function to start spends no retry.
   */
  unrun?: boolean;
}

export interface ReconcileInfo {
  key: string;
  reconcileId: string;
  reason: string;
  log: Logger;
  /** The claim's fencing token (queue/fence.ts): state written on its behalf checks it. */
  token: string;
  /** Aborted when the claim is lost (lease renewal refused or unconfirmed, deadline passed). */
  signal: AbortSignal;
  /**
   * The highest resourceVersion of the key's own object among the watch events that enqueued it since its
   * previous claim (queue/resource-version-order.ts), when any did: the handler must not plan from an older one.
   */
  minResourceVersion?: string;
}

/** CLAIM's answer (queue/scripts.ts). */
export type ClaimVerdict =
  | { verdict: 'claimed'; token: string; minResourceVersion?: string }
  | { verdict: 'held'; delayMs: number }
  | { verdict: 'reschedule'; jobId: string; delayMs: number }
  | { verdict: 'skip' };

/** RELEASE's answer: stale (the claim was lost), or what follows and the failure count. */
interface Released {
  stale: boolean;
  next: ScheduleResult;
  failures: number;
  backoffMs: number;
}

function parseRelease(raw: unknown): Released {
  return releasedFrom(releaseReply.parse(raw));
}

function releasedFrom(fields: string[]): Released {
  if (fields[0] === 'stale') return { stale: true, next: { action: 'none', jobId: '', delayMs: 0 }, failures: 0, backoffMs: 0 };
  return { stale: false, next: parseSchedule(fields), failures: Number(fields[4] ?? 0), backoffMs: Number(fields[5] ?? 0) };
}

const scriptArgsSchema = z.array(z.union([z.string(), z.number(), z.instanceof(Buffer)]));
/** Claims made when their jobs were fetched that no processor took (a crash between): at most this many kept. */
const MAX_FETCHED_CLAIMS = 10_000;

/** A claim made by the script that fetched its job, for the job's processor to take instead of sending CLAIM. */
interface FetchedClaim {
  verdict: ClaimVerdict;
  /** When the script that claimed was sent (the lease is counted from it). */
  sentAt: number;
}

/**
 * BullMQ's Worker, fetching each job with Ripple's MOVE_TO_ACTIVE_AND_CLAIM instead of BullMQ's
 * moveToActive when `fetch` is set: BullMQ builds the arguments as usual (RedisQueueBackend.moveToActive), and
 * `fetch` runs them in the composed script, so a waiting worker moves a job to active and claims its key
 * in one round trip.
 */
class ClaimingWorker extends Worker {
  fetch: ((args: unknown[]) => Promise<unknown>) | undefined;
  /** Set while the worker holds its jobs (KeyedWorker.hold): fetches wait for it to resolve. */
  held: Promise<void> | undefined;

  private heldNow(): Promise<void> | undefined {
    return this.held;
  }

  protected override createBackend(): void {
    super.createBackend();
    // BullMQ's backend sends every script through its execCommand (`<script>:<bullmq version>`); only
    // moveToActive's is taken over, the others run as BullMQ sends them.
    const backend = this.backend;
    const exec = backend.execCommand.bind(backend);
    backend.execCommand = (client, command: string, args: unknown[]) => {
      const fetch = this.fetch;
      return fetch && command.startsWith('moveToActive:') ? fetch(args) : exec(client, command, args);
    };
  }

  protected override async moveToActive(token: string, name?: string): Promise<Job> {
    // Held: the fetch waits here, before anything is taken from the queue, and goes on the moment the hold ends.
    // BullMQ's own pause would not do: a fetch already blocked on the queue's marker takes one job when it wakes.
    if (this.held) {
      // Read afresh after each wait: a hold may end and another begin meanwhile.
      for (let h = this.heldNow(); h !== undefined && this.closing === undefined; h = this.heldNow()) await h;
      // Closed while held: take nothing (no job, as an empty queue answers).
      if (this.closing !== undefined) return this.nextJobFromJobData(undefined, undefined, token);
    }
    return super.moveToActive(token, name);
  }
}

export function parseClaim(raw: unknown): ClaimVerdict {
  const [verdict, value, delay, version] = claimReply.parse(raw);
  return claimVerdict(verdict, value, delay, version);
}

function claimVerdict(verdict: ClaimVerdictName, value: string, delay: string, version: string): ClaimVerdict {
  if (verdict === 'claimed') return { verdict, token: value, ...(version !== '' ? { minResourceVersion: version } : {}) };
  if (verdict === 'held') return { verdict, delayMs: Number(delay) };
  if (verdict === 'reschedule') return { verdict, jobId: value, delayMs: Number(delay) };
  return { verdict };
}

export interface KeyedWorkerOptions {
  queue: WorkQueue;
  /** A connection of its own: BullMQ workers block on Redis. */
  connection: RedisClient;
  prefix?: string;
  concurrency?: number;
  backoff?: BackoffPolicy;
  /**
   * BullMQ's lock and the claim's lease: how long a dead, paused or cut-off worker keeps a key before
   * another worker takes it over (its handler is aborted by then).
   */
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
  /** While held (hold()), how often delayed jobs that have come due are made waiting (default 1 s). */
  heldPromoteMs?: number;
}

/**
 * The consumer side: runs `reconcile` for each key, never for one key in two places at once, and
 * schedules what follows (dirty re-run, backoff retry, requeueAfter) atomically on release.
 */
export class KeyedWorker {
  readonly worker: Worker;
  private readonly claiming: ClaimingWorker;
  private readonly name: string;
  private readonly leaseMs: number;
  /** The leases of the claims this worker runs, by BullMQ job id. */
  private readonly leases = new Map<string, ClaimLease>();
  /** Claims made by the scripts that fetched their jobs (claimFetched), by BullMQ job id, until processed. */
  private readonly fetchedClaims = new Map<string, FetchedClaim>();
  /** The caller's logger with this worker's function bound once: every line it and its reconciles write names it. */
  private readonly log: Logger;
  /** The keys RELEASE_AND_FINISH sends after moveToFinished's (bull-scripts.ts finishAddKeys), checked on first use. */
  private finishAddKeys: readonly string[] | undefined;
  /** While held: ends the hold (resolves the fetches' wait). */
  private endHold: (() => void) | undefined;
  private promoter: NodeJS.Timeout | undefined;

  constructor(private readonly opts: KeyedWorkerOptions) {
    this.name = opts.queue.name;
    this.log = opts.log.child({ function: this.name });
    this.leaseMs = opts.lockDurationMs ?? 30_000;
    const concurrency = opts.concurrency ?? 1;
    opts.metrics?.maxConcurrent.set({ controller: this.name }, concurrency);
    const worker = new ClaimingWorker(this.name, (job: Job, token?: string) => this.process(job, token), {
      connection: opts.connection,
      prefix: queuePrefix(opts.prefix ?? 'ripple', this.name),
      concurrency,
      lockDuration: this.leaseMs,
      // Queue failures (a Redis error in CLAIM, RELEASE or the follow-up) are retried by BullMQ: the
      // jobs' attempts are unbounded and this is their backoff, capped so a key waits at most 30 s
      // after Redis is back. Handler failures never reach it (they fail with UnrecoverableError).
      settings: { backoffStrategy: (attemptsMade: number) => Math.min(30_000, 100 * 2 ** Math.min(attemptsMade, 10)) },
      stalledInterval: opts.stalledIntervalMs ?? 30_000,
      // A job that stalls (its worker died) must come back, not fail: failing it would drop the key's
      // pending work until the next resync. Handlers are idempotent, so re-running is safe.
      maxStalledCount: 1000,
      autorun: true,
    });
    // Set before the worker's run loop first fetches (it starts asynchronously, after this constructor).
    worker.fetch = (args) => this.fetchAndClaim(args);
    this.worker = worker;
    this.claiming = worker;
    this.worker.on('error', (err) => this.log.error({ err: String(err) }, 'worker error'));
    // BullMQ could not extend these jobs' locks (Redis unreachable, or its event loop was blocked): the
    // stalled-job check may hand them to another worker, so their handlers must stop now.
    this.worker.on('lockRenewalFailed', (jobIds: string[]) => {
      for (const id of jobIds) this.leases.get(id)?.lose('lock-lost');
    });
  }

  private async process(job: Job, bullToken?: string): Promise<string> {
    if (job.name === RESYNC_JOB) {
      const swept = await sweepQueue(this.opts.queue, this.log);
      const n = (await this.opts.resync?.(this.log)) ?? 0;
      return `resync enqueued ${n}${swept ? `, swept ${swept} orphaned entries` : ''}`;
    }
    if (job.name !== RECONCILE_JOB) throw new UnrecoverableError(`unknown job name ${job.name}`);
    const parsed = reconcileJobSchema.safeParse(job.data);
    // A job no Ripple enqueuer made (written by hand, or by another version): fail it for the dashboard,
    // never retry it, and leave every key alone.
    if (!parsed.success) throw new UnrecoverableError(`not a reconcile job: ${parsed.error.message}`);
    const { key, reason } = parsed.data;
    const jobId = String(job.id);
    const m = this.opts.metrics;
    const labels = { name: this.name, controller: this.name };

    // Usually the script that fetched this job claimed its key already (claimFetched); otherwise CLAIM now.
    const fetched = this.fetchedClaims.get(jobId);
    this.fetchedClaims.delete(jobId);
    let claimSentAt = fetched?.sentAt ?? Date.now();
    // A Redis error here (unreachable, READONLY during a failover, OOM) is the queue's, not the handler's:
    // BullMQ retries this job with backoff (its attempts are unbounded), so the key's request is not dropped.
    const verdict = fetched?.verdict ?? parseClaim(await runScript(this.opts.connection, CLAIM, this.opts.queue.scriptKeys, [key, jobId, this.opts.queue.keys.jobKeyPrefix, String(this.leaseMs)]));
    if (verdict.verdict !== 'claimed') {
      m?.reconcileTotal.inc({ controller: this.name, result: 'skipped' });
      if (verdict.verdict === 'held') {
        // This job now stands for the key's next reconcile: wait (delayed) until the holder's lease ends;
        // the holder's release brings it forward.
        await job.moveToDelayed(Date.now() + verdict.delayMs, bullToken);
        throw new DelayedError();
      }
      if (verdict.verdict === 'reschedule') await this.opts.queue.apply(key, { action: 'reschedule', jobId: verdict.jobId, delayMs: verdict.delayMs }, 'held');
      return 'skipped: key is being reconciled elsewhere; it will run again after';
    }

    if (fetched !== undefined && Date.now() - fetched.sentAt > this.leaseMs / 3) {
      // Claimed when it was fetched, but not started since: BullMQ hands the next job back only after the
      // previous one's completion (its follow-up, retried while Redis reconnects), and nothing renews the
      // claim meanwhile. After a lease another worker may hold the key (a review reproduced two handlers at
      // once this way): confirm the claim, and renew it, before running.
      const sentAt = Date.now();
      const held = await runScript(this.opts.connection, RENEW, this.opts.queue.scriptKeys, [key, verdict.token, String(this.leaseMs)]);
      if (held !== 1) {
        m?.reconcileTotal.inc({ controller: this.name, result: 'fenced' });
        this.log.warn({ key, fencingToken: verdict.token, waitedMs: sentAt - fetched.sentAt }, 'the claim made when this job was fetched was taken over before it started; not running it');
        return 'fenced: the claim made at fetch was taken over before the job started';
      }
      claimSentAt = sentAt;
    }
    const renew = queueRenewal(this.opts.connection, this.opts.queue.keys, key, verdict.token, this.leaseMs);
    const lease = new ClaimLease(renew, key, verdict.token, this.leaseMs, claimSentAt, this.log);
    this.leases.set(jobId, lease);
    const reconcileId = randomUUID();
    const minResourceVersion = verdict.minResourceVersion;
    // Built on first use: a pino child costs a few µs (each binding passes the logger's redaction), and a
    // reconcile that logs nothing needs none (bench/README.md, "Round 6 of the queue").
    let child: Logger | undefined;
    const log = (): Logger =>
      // Not `token`: the logger redacts that name (base/log.ts), and a fencing token is no secret.
      (child ??= this.log.child({ key, reconcileId, fencingToken: verdict.token, ...(minResourceVersion !== undefined ? { minResourceVersion } : {}) }));
    const startedAt = Date.now();
    m?.queueDuration.observe(labels, Math.max(0, startedAt - job.timestamp - (job.opts.delay ?? 0)) / 1000);
    // controller_runtime_active_workers and the in-progress gauges (workqueue_unfinished_work_seconds, …).
    const processed = m?.startProcessing(this.name);
    let outcome: 'success' | 'terminal' | 'error' | 'requeue' | 'unrun' = 'success';
    let requeueAfterMs = 0;
    let failure: unknown;
    try {
      // log and signal are read on demand (see above, and queue/lease.ts).
      const info: ReconcileInfo = {
        key,
        reconcileId,
        reason,
        get log() {
          return log();
        },
        token: verdict.token,
        get signal() {
          return lease.signal;
        },
        ...(minResourceVersion !== undefined ? { minResourceVersion } : {}),
      };
      const result = await this.runBounded(lease, () => this.opts.reconcile(info), log);
      if (result?.unrun) {
        outcome = 'unrun';
        requeueAfterMs = Math.max(0, result.requeueAfterMs ?? 0);
      } else if (result?.requeueAfterMs !== undefined && result.requeueAfterMs >= 0) {
        outcome = 'requeue';
        requeueAfterMs = result.requeueAfterMs;
      }
    } catch (err) {
      failure = err;
      outcome = isTerminal(err) ? 'terminal' : 'error';
      if (err instanceof DeadlineExceededError) m?.reconcileTimeouts.inc({ controller: this.name });
    } finally {
      lease.stop();
      this.leases.delete(jobId);
      processed?.();
    }
    const seconds = (Date.now() - startedAt) / 1000;
    m?.workDuration.observe(labels, seconds);
    m?.reconcileTime.observe({ controller: this.name }, seconds);

    if (outcome === 'success' || outcome === 'requeue' || outcome === 'unrun') {
      // The steady state: RELEASE runs in the same script as BullMQ finishing this job (and fetching the
      // next), when BullMQ completes it; see finishWithRelease. An unrun job comes back under its own reason.
      await this.finishWithRelease(job, key, verdict.token, outcome, requeueAfterMs, log, reason);
      return outcome;
    }
    const released = await this.release(key, verdict.token, outcome, requeueAfterMs, log);
    if (released.stale) {
      // Another claim has the key: whatever this one decided is not ours to schedule any more.
      m?.reconcileTotal.inc({ controller: this.name, result: 'fenced' });
      log().warn({ lost: lease.lost ?? 'taken over' }, 'lost the claim before releasing; the key is reconciled by its new holder');
      return 'fenced: the claim was lost before release';
    }
    await this.applyFollowUp(key, released.next, outcome === 'error' ? 'retry' : 'dirty', log);

    m?.reconcileErrors.inc({ controller: this.name });
    m?.reconcileTotal.inc({ controller: this.name, result: 'error' });
    if (outcome === 'error') {
      m?.retries.inc(labels);
      log().warn({ err: errorText(failure), failures: released.failures, backoffMs: released.backoffMs }, 'reconcile failed; retrying with backoff');
    } else {
      m?.terminalErrors.inc({ controller: this.name });
      log().warn({ err: errorText(failure) }, 'reconcile failed terminally; not retrying');
    }
    // Ripple scheduled the retry itself (or none, for a terminal error); this job only shows as failed
    // on the dashboard with its reason, and BullMQ must not run it again.
    throw new UnrecoverableError(errorText(failure));
  }

  /**
   * Makes BullMQ's completion of `job` also release its key: the job's moveToCompleted (which BullMQ calls
   * once this processor returns) runs RELEASE_AND_FINISH, one script for RELEASE, adding its follow-up
   * job, finishing this job and fetching the next. BullMQ retries a completion that failed on a
   * connection error (Worker.retryIfFailed), and a resent RELEASE answers what it answered before.
   * RELEASE's answer is handled as the separate RELEASE's was: metrics, the fenced case, and moving a
   * pending job earlier (the only follow-up a script cannot do, retried; should every attempt fail,
   * the pending job still runs, at its later time).
   */
  private async finishWithRelease(job: Job, key: string, token: string, outcome: 'success' | 'requeue' | 'unrun', requeueAfterMs: number, log: () => Logger, reason: string): Promise<void> {
    const q = this.opts.queue;
    const followUpReason = outcome === 'requeue' ? 'requeue' : outcome === 'unrun' ? reason : 'dirty';
    const releaseArgs = [key, token, outcome, String(Math.round(requeueAfterMs)), '0', q.keys.jobKeyPrefix, ...(await q.addArgs(key, followUpReason))];
    const backend = this.worker.backend;
    job.moveToCompleted = async (returnValue: unknown, bullToken: string, fetchNext = true) => {
      await this.worker.waitUntilReady();
      // Held: this completion fetches (and claims) no next job; the held fetch loop takes it when the hold ends.
      const args = backend.moveToCompletedArgs(job, JSON.stringify(returnValue), job.opts.removeOnComplete ?? false, bullToken, fetchNext && !this.claiming.held);
      // Ripple's keys, BullMQ's, then the add's own; RELEASE's arguments then BullMQ's; each list built once (this
      // runs for every job).
      const keys = [...q.scriptKeys];
      for (let i = 0; i < BULL_FINISH_KEYS; i++) keys.push(String(args[i]));
      this.finishAddKeys ??= finishAddKeys(q.addingScriptKeys.slice(SCRIPT_KEY_COUNT), keys.slice(SCRIPT_KEY_COUNT));
      for (const k of this.finishAddKeys) keys.push(k);
      // A copy: BullMQ calls this again when a completion failed on a connection error.
      const argv: Array<string | number | Buffer> = [...releaseArgs];
      for (let i = BULL_FINISH_KEYS; i < args.length; i++) {
        const a = args[i];
        // ioredis sends undefined as ''; BullMQ's script reads '' as "no fields to update".
        argv.push(a === undefined ? '' : typeof a === 'boolean' ? String(a) : a);
      }
      argv.push(RECONCILE_JOB, String(this.leaseMs));
      const sentAt = Date.now();
      const raw = await runScript(this.opts.connection, RELEASE_AND_FINISH, keys, argv);
      const [finished, releasedRaw, nextClaim] = finishReply.parse(raw);
      this.recordFetchedClaim(nextClaim, sentAt);
      job.returnvalue = returnValue;
      job.finishedOn = Number(args[BULL_FINISH_KEYS + 1]);
      job.attemptsMade += 1;
      await this.afterRelease(key, releasedFrom(releasedRaw), outcome, requeueAfterMs, log, followUpReason);
      if (typeof finished === 'number' && finished < 0) throw backend.finishedErrors({ code: finished, jobId: String(job.id), command: 'moveToFinished', state: 'active' });
      // As BullMQ's RedisQueueBackend.moveToFinished answers: [] when no next job (the worker then marks itself drained
      // and resets its delays before blocking for the next one).
      return typeof finished === 'number' ? [] : raw2NextJobData(finished);
    };
  }

  /**
   * BullMQ's moveToActive (its arguments built by BullMQ) run as MOVE_TO_ACTIVE_AND_CLAIM: the fetched
   * job's key is claimed in the same script, and the claim kept for the job's processor.
   */
  private async fetchAndClaim(args: unknown[]): Promise<unknown> {
    const k = this.opts.queue.keys;
    const keys = args.slice(0, BULL_MOVE_TO_ACTIVE_KEYS).map(String);
    const argv = scriptArgsSchema.parse(args.slice(BULL_MOVE_TO_ACTIVE_KEYS));
    const sentAt = Date.now();
    // On this worker's connection, as its other scripts (BullMQ's client may be its own wrapper of it).
    const raw = await runScript(this.opts.connection, MOVE_TO_ACTIVE_AND_CLAIM, [...this.opts.queue.scriptKeys, ...keys], [...argv, RECONCILE_JOB, k.jobKeyPrefix, String(this.leaseMs)]);
    const [fetched, claimed] = fetchReply.parse(raw);
    this.recordFetchedClaim(claimed, sentAt);
    return fetched;
  }

  private recordFetchedClaim(claimed: FetchedClaimReply, sentAt: number): void {
    if (claimed.length === 0) return;
    const [verdict, value, delay, version, jobId] = claimed;
    this.fetchedClaims.set(jobId, { verdict: claimVerdict(verdict, value, delay, version), sentAt });
    // A claim whose job no processor took (this process was stopped between) runs out with its lease.
    for (const id of this.fetchedClaims.keys()) {
      if (this.fetchedClaims.size <= MAX_FETCHED_CLAIMS) break;
      this.fetchedClaims.delete(id);
    }
  }

  /** Metrics, logs and the follow-up that is left to do after a release of a claim that succeeded. */
  private async afterRelease(key: string, released: Released, outcome: 'success' | 'requeue' | 'unrun', requeueAfterMs: number, log: () => Logger, followUpReason: string): Promise<void> {
    const m = this.opts.metrics;
    if (released.stale) {
      m?.reconcileTotal.inc({ controller: this.name, result: 'fenced' });
      log().warn('lost the claim before releasing; the key is reconciled by its new holder');
      return;
    }
    if (outcome === 'unrun') {
      m?.reconcileTotal.inc({ controller: this.name, result: 'unrun' });
      if (this.log.isLevelEnabled('debug')) log().debug({ requeueAfterMs }, 'not run: no replica took the call; the key waits without spending a retry');
    } else {
      m?.reconcileTotal.inc({ controller: this.name, result: outcome === 'requeue' ? 'requeue_after' : 'success' });
      if (this.log.isLevelEnabled('debug')) log().debug({ requeueAfterMs: outcome === 'requeue' ? requeueAfterMs : undefined }, 'reconciled');
    }
    try {
      await this.applyFollowUp(key, released.next, followUpReason, log);
    } catch {
      // Logged by applyFollowUp. The job is finished already: the pending job this would have moved
      // earlier still runs at its own time.
    }
  }

  /**
   * Runs the handler in the claim's scope until it settles. At the deadline, or when the lease is lost,
   * the handler is told through its signal, and the key stays held until the lease has run out (no
   * renewals after an abort), whether the handler settled or not: a retry never overlaps a handler still
   * running on a live lease, nor a write it sent just before. A handler that settles after that is
   * abandoned: its calls through Ripple's helpers fail.
   */
  private async runBounded<T>(lease: ClaimLease, handler: () => Promise<T>, log: () => Logger): Promise<T> {
    const timeoutMs = this.opts.reconcileTimeoutMs ?? DEFAULT_RECONCILE_TIMEOUT_MS;
    const scope: ReconcileScope = {
      get signal() {
        return lease.signal;
      },
      token: lease.token,
      get sendBy() {
        return lease.sendBy;
      },
      get aliveUntil() {
        return lease.aliveUntil;
      },
    };
    const work = inReconcileScope(scope, handler);
    let deadline: NodeJS.Timeout | undefined;
    if (timeoutMs > 0 && Number.isFinite(timeoutMs)) deadline = setTimeout(() => lease.lose('deadline'), timeoutMs);
    try {
      // Settled or lost, whichever is first, in one promise: this runs for every job.
      await new Promise<void>((resolve) => {
        void work.then(
          () => resolve(),
          () => resolve(),
        );
        lease.whenLost(resolve);
      });
      if (lease.lost !== undefined) {
        const reason = lease.lost;
        log().warn({ reason }, 'reconcile told to stop; keeping the key until its lease has run out');
        // Until the lease has run out, settled or not: a handler that settled because its request was aborted
        // on this side may still have that write on its way to the server, and the key's next holder must
        // not read before it lands (docs/kernel.md, "Effects").
        await sleepUntil(lease.aliveUntil);
        if (reason === 'deadline') throw new DeadlineExceededError(`reconcile did not finish within ${timeoutMs} ms`);
        throw new LeaseLostError(`reconcile lost its claim (${reason})`);
      }
      return await work;
    } finally {
      clearTimeout(deadline);
    }
  }

  /**
   * RELEASE, retried a few times: the key stays held (its lease running out) until it succeeds. If it
   * never does, the error goes to BullMQ, which retries this job; by then the lease has run out and the
   * retry takes the key over and reconciles it again, so no follow-up is lost.
   */
  private async release(key: string, token: string, outcome: string, requeueAfterMs: number, log: () => Logger): Promise<Released> {
    const q = this.opts.queue;
    const k = q.keys;
    const redis = this.opts.connection;
    const addArgs = await q.addArgs(key, outcome === 'error' ? 'retry' : 'dirty');
    return withRetries(
      async () => {
        // Only this claim holds the key, so the failure count it reads cannot change before RELEASE
        // increments it; reading it costs a round trip on the error path only.
        const backoffMs = outcome === 'error' ? backoffDelay(this.opts.backoff ?? DEFAULT_BACKOFF, Number((await redis.hget(k.failures, key)) ?? 0) + 1) : 0;
        const raw = await runScript(redis, RELEASE, q.addingScriptKeys, [key, token, outcome, String(Math.round(requeueAfterMs)), String(Math.round(backoffMs)), k.jobKeyPrefix, ...addArgs]);
        return parseRelease(raw);
      },
      this.opts.applyRetry ?? DEFAULT_APPLY_RETRY,
      (err, attempt, retryInMs) => log().warn({ attempt, retryInMs, err: errorText(err) }, 'could not release the key; retrying'),
    );
  }

  /**
   * Adds the job RELEASE decided on. Retried: the key is already released, so a lost add would leave
   * the retry, requeueAfter or dirty re-run undone. If every attempt fails the error goes to BullMQ,
   * which runs this job again later; meanwhile an event for the key within the pending grace period
   * adds the recorded job itself, and after it a new one is recorded.
   */
  private async applyFollowUp(key: string, next: ScheduleResult, reason: string, log: () => Logger): Promise<void> {
    if (next.action !== 'add' && next.action !== 'reschedule') return;
    try {
      await withRetries(
        () => this.opts.queue.apply(key, next, reason),
        this.opts.applyRetry ?? DEFAULT_APPLY_RETRY,
        (err, attempt, retryInMs) => {
          if (retryInMs !== undefined) log().warn({ key, attempt, retryInMs, err: errorText(err) }, 'could not schedule the follow-up reconcile; retrying');
        },
      );
    } catch (err) {
      // BullMQ retries this job (unbounded attempts, backoff): its next run claims the key again and
      // reconciles it, which carries out the lost follow-up.
      log().error({ key, action: next.action, jobId: next.jobId, delayMs: next.delayMs, reason, err: errorText(err) }, 'could not schedule the follow-up reconcile; this job runs again to redo it');
      throw err;
    }
  }

  /**
   * Takes no new job until resume(): the queue keeps them (waiting, counted by its metrics), and nothing is claimed,
   * so no retry is spent on them. Jobs already running go on. Delayed jobs that come due meanwhile (a backoff, a
   * requeueAfter, the resync tick) are made waiting, which only fetching would otherwise do, so the queue's waiting
   * count (what KEDA scales a function on) shows them too. The dispatcher holds a function's jobs while it has no
   * ready replica.
   */
  hold(): void {
    if (this.endHold) return;
    this.claiming.held = new Promise<void>((resolve) => {
      this.endHold = resolve;
    });
    const every = this.opts.heldPromoteMs ?? 1_000;
    this.promoter = setInterval(() => void this.promoteDue().catch((err: unknown) => this.log.warn({ err: errorText(err) }, 'could not promote due delayed jobs while held')), every);
    this.promoter.unref();
    this.log.info('holding jobs: taking none until resumed');
  }

  /** Ends hold(): the waiting fetches take work at once. */
  resume(): void {
    if (!this.endHold) return;
    clearInterval(this.promoter);
    this.promoter = undefined;
    this.claiming.held = undefined;
    this.endHold();
    this.endHold = undefined;
    // A fetch may be blocked on the queue's marker rather than held (the markers of the held jobs were taken
    // meanwhile): a new marker wakes it, so the waiting work goes out now and not at its block timeout. A spare
    // marker costs one empty fetch.
    void this.opts.connection.zadd(this.opts.queue.bull.keys.marker ?? this.opts.queue.bull.toKey('marker'), 0, '0').catch(() => undefined);
    this.log.info('resumed: taking jobs');
  }

  get isHeld(): boolean {
    return this.endHold !== undefined;
  }

  /**
   * Makes the delayed jobs that are due waiting (earliest first, a page at a time). The resync tick is run here
   * instead, and put off by its interval: it needs no function, and made waiting it would wake the function every
   * interval even with nothing to reconcile. The keys it enqueues are what wakes it.
   */
  private async promoteDue(): Promise<void> {
    const page = 100;
    for (;;) {
      const due = (await this.opts.queue.bull.getDelayed(0, page - 1)).filter((j) => j.timestamp + (j.opts.delay ?? j.delay ?? 0) <= Date.now());
      // A job that was promoted, taken or removed meanwhile (by another replica) throws: nothing to do for it.
      await Promise.all(due.map((j) => (j.name === RESYNC_JOB ? this.resyncWhileHeld(j) : j.promote()).catch(() => undefined)));
      if (due.length < page) return;
    }
  }

  private async resyncWhileHeld(job: Job): Promise<void> {
    const scheduler = job.repeatJobKey ? await this.opts.queue.bull.getJobScheduler(job.repeatJobKey) : undefined;
    // BullMQ 6 types a job's options without `repeat` (only its scheduler's jobs carry it): the scheduler says the interval.
    const every = Number(scheduler?.every ?? 60_000);
    await job.changeDelay(every);
    const swept = await sweepQueue(this.opts.queue, this.log);
    const n = (await this.opts.resync?.(this.log)) ?? 0;
    this.log.debug({ enqueued: n, swept }, 'resync tick run while held');
  }

  /** Graceful: finishes in-flight reconciles and takes no new ones. */
  async close(): Promise<void> {
    const closing = this.worker.close();
    // A held fetch gives up once the worker is closing (see ClaimingWorker.moveToActive).
    this.resume();
    await closing;
  }
}

/** Resolves at local time `at` (at once when it has passed). */
function sleepUntil(at: number): Promise<void> {
  const ms = at - Date.now();
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
