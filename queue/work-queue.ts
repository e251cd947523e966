import { Queue, type JobsOptions } from 'bullmq';
import { z } from 'zod';
import type { Logger } from '../base/log.js';
import type { RedisClient } from './connection.js';
import type { QueueMetrics } from './metrics.js';
import { bullAddArgs, bullAddKeys } from './bull-scripts.js';
import { queueKeys, queuePrefix, scriptKeys, type QueueKeys } from './keys.js';
import { throwIfLeaseLost } from '../base/reconcile-scope.js';
import { runScript, scriptSha } from './run-script.js';
import { ENQUEUE } from './scripts.js';
import { scheduleReply } from './script-replies.js';

/** The payload of every reconcile job. */
export const reconcileJobSchema = z.object({
  key: z.string().min(1),
  /** Why it was enqueued (event type, resync, requeue, retry), for logs and the dashboard. */
  reason: z.string().default('event'),
});
export type ReconcileJob = z.infer<typeof reconcileJobSchema>;

export const RECONCILE_JOB = 'reconcile';
export const RESYNC_JOB = 'resync';

export type ScheduleAction = 'add' | 'reschedule' | 'coalesced' | 'deferred' | 'none';
export interface ScheduleResult {
  action: ScheduleAction;
  jobId: string;
  delayMs: number;
  /**
   * An `add` of an id another call recorded moments ago (its job not created yet, or its add failed):
   * that call may create the job first with a later delay, which BullMQ keeps; `apply` then moves it.
   */
  readd?: boolean;
  /** The script added the job itself (ENQUEUE does): nothing is left for `apply` to do. */
  added?: boolean;
}

export interface WorkQueueOptions {
  /** Queue name: the function's name. */
  name: string;
  connection: RedisClient;
  /** Redis key prefix for BullMQ and Ripple's own keys (default `ripple`). */
  prefix?: string;
  metrics?: QueueMetrics;
  log?: Logger;
}

// Finished jobs stay a while for the dashboard; Ripple's scripts treat finished jobs as absent.
// Attempts are (practically) unbounded because only queue failures reach BullMQ's retry: a Redis error
// in CLAIM, RELEASE or the follow-up must delay a job, never drop it. Handler failures are retried by
// Ripple's own per-key backoff and fail their job with UnrecoverableError (queue/worker.ts).
/** How long finished jobs are kept (the queue-throughput bench gives plain BullMQ the same, like for like). */
export const JOB_RETENTION = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 },
} satisfies JobsOptions;
/** How many ENQUEUE scripts addMany sends in one pipeline (one write, one wait for the replies). */
export const ENQUEUE_BATCH = 500;

const JOB_DEFAULTS: JobsOptions = {
  attempts: 1_000_000,
  backoff: { type: 'custom' },
  ...JOB_RETENTION,
};

/**
 * The producer side of a keyed work queue: client-go's Add/AddAfter on top of BullMQ.
 * Adding a key that is waiting coalesces; adding a key that is being reconciled marks it dirty so it
 * runs exactly once more afterwards; an earlier request moves a pending delayed job forward.
 */
export class WorkQueue {
  readonly bull: Queue;
  readonly keys: QueueKeys;
  readonly name: string;

  constructor(private readonly opts: WorkQueueOptions) {
    this.name = opts.name;
    const prefix = opts.prefix ?? 'ripple';
    this.bull = new Queue(opts.name, { connection: opts.connection, prefix: queuePrefix(prefix, opts.name), defaultJobOptions: JOB_DEFAULTS });
    this.keys = queueKeys(prefix, opts.name);
    opts.metrics?.trackDepth(opts.name, () => this.depth());
  }

  /** The queue's Redis connection (its scripts run on it). */
  get connection(): RedisClient {
    return this.opts.connection;
  }

  /** KEYS of every queue script (scriptKeys()), built once: every job sends them. */
  get scriptKeys(): readonly string[] {
    this.ownKeys ??= scriptKeys(this.keys);
    return this.ownKeys;
  }
  private ownKeys: readonly string[] | undefined;

  /** KEYS of the scripts that may add a job (ENQUEUE, RELEASE): Ripple's, then BullMQ's for its add (bullAddKeys()). Built once. */
  get addingScriptKeys(): readonly string[] {
    this.addingKeys ??= [...this.scriptKeys, ...bullAddKeys(this.bull)];
    return this.addingKeys;
  }
  private addingKeys: readonly string[] | undefined;

  /**
   * What BullMQ's add of a reconcile job for `key` would send, for a script to add it itself. BullMQ
   * builds the packed arguments and options once per queue: the script sets what differs per job (its id,
   * delay and timestamp), so only the data is new per call (JSON, as BullMQ's Job.asJSON writes it).
   */
  async addArgs(key: string, reason: string): Promise<[Buffer, string, Buffer]> {
    this.addTemplate ??= bullAddArgs(this.bull, RECONCILE_JOB, {}, { ...JOB_DEFAULTS });
    const [packedArgs, , packedOpts] = await this.addTemplate;
    const data: ReconcileJob = { key, reason };
    return [packedArgs, JSON.stringify(data), packedOpts];
  }
  private addTemplate: Promise<[Buffer, string, Buffer]> | undefined;

  /**
   * Requests a reconcile of `key`, now or after `delayMs`. `resourceVersion`: the version of the key's own
   * object whose watch event asks for it; the key keeps the highest such version until its next claim, which
   * hands it to the handler (ReconcileRequest.minResourceVersion). Without it the job is as it always was.
   */
  async add(key: string, delayMs = 0, reason = 'event', resourceVersion?: string): Promise<ScheduleResult> {
    const k = this.keys;
    const raw = await runScript(this.opts.connection, ENQUEUE, this.addingScriptKeys, [key, String(Math.max(0, Math.round(delayMs))), k.jobKeyPrefix, resourceVersion ?? '', ...(await this.addArgs(key, reason))]);
    this.opts.metrics?.adds.inc({ name: this.name, controller: this.name });
    const result = parseSchedule(raw);
    if (!result.added) await this.apply(key, result, reason);
    return result;
  }

  /**
   * Requests a reconcile of each key now, as add() does for one, in pipelines of ENQUEUE_BATCH scripts:
   * a resync or a watcher's replay of 1,000 objects is three round trips (the first key alone, then two
   * pipelines), not 1,000. Each key's ENQUEUE is the same script as add()'s and runs atomically on its own,
   * so coalescing, dirty marks and earlier-wins are unchanged; only the waiting between them is gone. A key whose
   * script or follow-up failed makes it reject with the first such error, after every other key was carried
   * out; enqueueing again is safe, as an add of a waiting key coalesces. `resourceVersions[i]`, when given, is
   * keys[i]'s as for add().
   */
  async addMany(keys: readonly string[], reason = 'resync', resourceVersions?: ReadonlyArray<string | undefined>): Promise<ScheduleResult[]> {
    throwIfLeaseLost('Redis script');
    const out: ScheduleResult[] = [];
    if (keys.length === 0) return out;
    // The first key on its own through runScript, which loads the script when Redis does not have it
    // (first use, a restart, a failed-over node): the pipelines after it then get no NOSCRIPT.
    out.push(await this.add(keys[0]!, 0, reason, resourceVersions?.[0]));
    // Every batch is sent even if one failed, so a failure costs only its own keys; the first error is thrown.
    let failed: unknown;
    for (let i = 1; i < keys.length; i += ENQUEUE_BATCH) {
      try {
        out.push(...(await this.addBatch(keys.slice(i, i + ENQUEUE_BATCH), reason, resourceVersions?.slice(i, i + ENQUEUE_BATCH))));
      } catch (err) {
        failed ??= err;
      }
    }
    if (failed !== undefined) throw failed;
    return out;
  }

  private async addBatch(keys: string[], reason: string, resourceVersions?: ReadonlyArray<string | undefined>): Promise<ScheduleResult[]> {
    const k = this.keys;
    const scriptKeys = this.addingScriptKeys;
    const args = await Promise.all(keys.map(async (key, i) => [key, '0', k.jobKeyPrefix, resourceVersions?.[i] ?? '', ...(await this.addArgs(key, reason))]));
    const sha = scriptSha(ENQUEUE);
    const send = (indexes: number[]) => {
      const pipeline = this.opts.connection.pipeline();
      for (const i of indexes) pipeline.evalsha(sha, scriptKeys.length, ...scriptKeys, ...args[i]!);
      return pipeline.exec();
    };
    const replies = new Array<unknown>(keys.length);
    const errors = new Array<Error | undefined>(keys.length);
    let todo = keys.map((_, i) => i);
    // Should Redis lose the script meanwhile (a restart, a failover), NOSCRIPT: load it, send those again.
    for (let attempt = 0; attempt < 2 && todo.length > 0; attempt++) {
      const answers = (await send(todo)) ?? [];
      const again: number[] = [];
      todo.forEach((index, j) => {
        const [err, reply] = answers[j] ?? [new Error('no reply in the pipeline'), undefined];
        if (err && attempt === 0 && err.message.startsWith('NOSCRIPT')) again.push(index);
        else if (err) errors[index] = err;
        else replies[index] = reply;
      });
      // The first one through runScript, which falls back to EVAL: that loads the script on the node that
      // holds this queue's keys (SCRIPT LOAD on a cluster client would go to any node).
      const first = again.shift();
      if (first !== undefined) {
        try {
          replies[first] = await runScript(this.opts.connection, ENQUEUE, scriptKeys, args[first]!);
        } catch (err) {
          errors[first] = err instanceof Error ? err : new Error(String(err));
        }
      }
      todo = again;
    }
    const results: ScheduleResult[] = [];
    let failed: Error | undefined;
    for (const [i, key] of keys.entries()) {
      const err = errors[i];
      if (err) {
        failed ??= err;
        continue;
      }
      this.opts.metrics?.adds.inc({ name: this.name, controller: this.name });
      const result = parseSchedule(replies[i]);
      // Only a reschedule (moving a pending delayed job earlier) is left to do outside the script. One that
      // fails must not skip the others: their scripts already lowered the keys' due times, so enqueueing
      // them again coalesces and would never move their pending jobs.
      if (!result.added) {
        try {
          await this.apply(key, result, reason);
        } catch (err) {
          failed ??= err instanceof Error ? err : new Error(String(err));
        }
      }
      results.push(result);
    }
    if (failed) throw failed;
    return results;
  }

  /**
   * Carries out what a script decided: adds the new job or moves the pending one earlier. Safe to call
   * again after a failure: adding an id that exists is ignored, and moving a job earlier is idempotent.
   */
  async apply(key: string, result: ScheduleResult, reason: string): Promise<void> {
    if (result.added) return;
    if (result.action === 'add') {
      const data: ReconcileJob = { key, reason };
      await this.bull.add(RECONCILE_JOB, data, { jobId: result.jobId, delay: result.delayMs });
      if (result.readd) await this.moveEarlier(key, result, true);
    } else if (result.action === 'reschedule') {
      await this.moveEarlier(key, result, false);
    }
  }

  /**
   * Brings the pending job forward to `result.delayMs` from now (only if it is later, when `onlyIfLater`).
   * Two callers can move one job at once (an event and a release), and their changes may land in
   * either order, the later-due one last. So after its own change each caller compares the job's delayed
   * time with the key's due in Ripple's structures (which scripts only ever lower) and corrects it; the
   * caller whose change landed last sees the final state, so the earliest request wins.
   */
  private async moveEarlier(key: string, result: ScheduleResult, onlyIfLater: boolean): Promise<void> {
    let delayMs = result.delayMs;
    const job = await this.bull.getJob(result.jobId);
    if (!job) return;
    // 50 ms of slack: the job's timestamp comes from the adder's clock, not Redis's.
    if (onlyIfLater && job.timestamp + (job.delay ?? 0) <= Date.now() + delayMs + 50) return;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        // A promoted job is no longer delayed: nothing later can land behind it, so no re-check.
        if (delayMs <= 0) return await job.promote();
        await job.changeDelay(delayMs);
      } catch (err) {
        // The job became due, started or finished since the script ran: nothing left to move. Anything
        // else (Redis unreachable) propagates so the caller retries.
        if (!(err instanceof Error && /is not in the delayed state|Missing key for job/.test(err.message))) throw err;
        this.opts.log?.debug({ key, jobId: result.jobId, err: err.message }, 'pending job no longer delayed');
        return;
      }
      const [pending, due, score] = await Promise.all([
        this.opts.connection.hget(this.keys.pending, key),
        this.opts.connection.zscore(this.keys.due, key),
        this.opts.connection.zscore(this.bull.toKey('delayed'), result.jobId),
      ]);
      if (pending !== result.jobId || due === null || score === null) return;
      // BullMQ scores a delayed job by its due time × 0x1000 plus a counter.
      const jobDue = Math.floor(Number(score) / 0x1000);
      if (jobDue <= Number(due) + 50) return;
      delayMs = Number(due) - Date.now();
    }
  }

  /** Keys waiting or delayed (client-go's depth; active keys are not counted). */
  async depth(): Promise<number> {
    return this.opts.connection.zcard(this.keys.due);
  }

  async close(): Promise<void> {
    await this.bull.close();
  }
}

export function parseSchedule(raw: unknown): ScheduleResult {
  const parsed = scheduleReply.parse(raw);
  const action = parsed[0] === 'added' ? 'add' : parsed[0];
  return { action, jobId: parsed[1], delayMs: Number(parsed[2]), ...(parsed[3] === '1' ? { readd: true } : {}), ...(parsed[0] === 'added' ? { added: true } : {}) };
}
