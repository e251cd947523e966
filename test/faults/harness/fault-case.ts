import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { expect, inject } from 'vitest';
import { z } from 'zod';
import { createRedis } from '../../../queue/connection.js';
import { WorkQueue } from '../../../queue/work-queue.js';
import { createLogger } from '../../../base/log.js';
import { startProcess, stopProcess } from '../../harness/processes.js';
import { reconcileRecordSchema } from '../checker.js';
import { waitFor } from '../../harness/sandbox.js';
import { effectKeys } from './effect-keys.js';
import { ApiEffects, apiReads, stateStamps } from './effects.js';
import { drainAndCheck, Storm, type CaseReport } from './storm.js';

export const QUEUE_NAME = 'faults';

const stateRecordSchema = z.object({ token: z.string(), version: z.number() });
const slowDoneSchema = z.object({
  outcome: reconcileRecordSchema.shape.outcome,
  effects: z.array(z.object({ kind: z.string(), outcome: z.string(), detail: z.string().optional() })),
  pausedMs: z.number().optional(),
});
export type SlowDone = z.infer<typeof slowDoneSchema>;

/**
 * One fault case's moving parts: the world (the harness's Redis, never faulted, under a prefix of the
 * case's own), the queue's Redis (the case's own, which it faults), worker processes, a storm driver,
 * and a history directory the workers append to.
 */
export class FaultCase {
  readonly prefix: string;
  readonly historyDir: string;
  readonly world: Redis;
  readonly queueRedis: Redis;
  readonly queue: WorkQueue;
  readonly storm: Storm;
  readonly workers: ChildProcess[] = [];
  private api?: ApiEffects;
  private stateEffects = false;

  constructor(
    readonly name: string,
    readonly queueUrl: string,
    keys: number,
  ) {
    this.prefix = `faults-${name}-${Math.random().toString(36).slice(2, 8)}`;
    this.historyDir = mkdtempSync(path.join(tmpdir(), `ripple-faults-${name}-`));
    this.world = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
    const queueRedis = createRedis(queueUrl, { maxRetriesPerRequest: null });
    // One server or a Sentinel-managed primary; a Redis Cluster case uses harness/cluster-case.ts.
    if (!(queueRedis instanceof Redis)) throw new Error(`FaultCase needs one Redis or Sentinel, not a cluster (${queueUrl})`);
    this.queueRedis = queueRedis;
    // ioredis reports every failed reconnect while the case has Redis down; that is the fault, not news.
    this.queueRedis.on('error', () => undefined);
    this.queue = new WorkQueue({ name: QUEUE_NAME, connection: this.queueRedis, prefix: this.prefix, log: createLogger(`faults-${name}`, 'error') });
    this.queue.bull.on('error', () => undefined);
    this.storm = new Storm(this.world, this.queue, this.prefix, Array.from({ length: keys }, (_, i) => `ns/obj-${i}`));
  }

  /** Starts one fault-worker process; `env` overrides the defaults (and QUEUE_URL, e.g. through a proxy). */
  async startWorker(env: Record<string, string> = {}): Promise<ChildProcess> {
    const child = await startProcess(
      'test/faults/fixtures/fault-worker.ts',
      { QUEUE_URL: this.queueUrl, WORLD_URL: inject('redisUrl'), PREFIX: this.prefix, QUEUE: QUEUE_NAME, HISTORY_DIR: this.historyDir, ...env },
      60_000,
    );
    this.workers.push(child);
    return child;
  }

  /** Starts `n` fault-worker processes at once (each takes seconds to load; one after the other they add up). */
  async startWorkers(n: number, env: Record<string, string> = {}): Promise<ChildProcess[]> {
    return Promise.all(Array.from({ length: n }, () => this.startWorker(env)));
  }

  /**
   * Makes the workers' reconciles write real effects (test/faults/fixtures/fault-worker.ts, EFFECTS) and has
   * check() judge them by the servers' order: `api`, a ConfigMap per key in `namespace`, watched from its
   * creation; `state`, a handler state write on the queue's Redis (`stateWrite`: the raw client, or the fenced
   * helper). Returns the environment to start the workers with; a worker given another KUBECONFIG_PATH (a
   * proxy's) reaches the same server another way.
   */
  async withEffects(opts: { api?: { kc: KubeConfig; namespace: string }; state?: boolean; stateWrite?: 'raw' | 'fenced' }): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    const kinds: string[] = [];
    if (opts.api) {
      this.api = await ApiEffects.start(opts.api.kc, opts.api.namespace, this.prefix, this.storm.keys);
      kinds.push('api');
      env.KUBECONFIG_PATH = inject('kubeconfig');
      env.NAMESPACE = opts.api.namespace;
    }
    if (opts.state) {
      this.stateEffects = true;
      kinds.push('state');
      env.STATE_WRITE = opts.stateWrite ?? 'fenced';
    }
    env.EFFECTS = kinds.join(',');
    return env;
  }

  /** The handler state the key's last landed state write left (`{ token, version }`), if any. */
  async stateOf(key: string): Promise<{ token: string; version: number } | undefined> {
    const text = await this.queueRedis.hget(effectKeys(this.prefix, QUEUE_NAME).state, key);
    return text === null ? undefined : stateRecordSchema.parse(JSON.parse(text));
  }

  /** The slow reconcile's own account (fault-worker's `slow-done`): its commit, its effects, its pause. */
  async slowDone(timeoutMs = 30_000): Promise<SlowDone> {
    const text = await waitFor('the slow reconcile to end', timeoutMs, async () => (await this.world.get(`${this.prefix}:slow-done`)) ?? undefined);
    return slowDoneSchema.parse(JSON.parse(text));
  }

  /**
   * TAKEOVER_WAIT: the `pid:token` of the newer holder of the slow key once it read and waits for go(). With
   * `beforeStaleSend`, fails unless that read came before the slow reconcile sent its writes (both markers are on
   * the world Redis, in its order): a run that missed the schedule must not pass for one that survived it.
   */
  async takeoverWaiting(opts: { beforeStaleSend?: boolean; timeoutMs?: number } = {}): Promise<string> {
    const taker = await waitFor('the new holder of the slow key to read and wait', opts.timeoutMs ?? 30_000, async () => (await this.world.get(`${this.prefix}:takeover-waiting`)) ?? undefined, 20);
    if (opts.beforeStaleSend && (await this.world.exists(`${this.prefix}:slow-sending`)) === 1) {
      throw new Error(`the new holder (${taker}) read only after the slow reconcile had sent its writes: this run missed the case's schedule`);
    }
    return taker;
  }

  /** Lets the waiting new holder of the slow key go on to its effects. */
  async takeoverGo(): Promise<void> {
    await this.world.set(`${this.prefix}:takeover-go`, '1');
  }

  /** The pid of the worker that took the slow reconcile (SLOW_KEY), once it started it. */
  async slowWorker(timeoutMs = 60_000, pollMs = 100): Promise<ChildProcess> {
    const pid = await waitFor('a worker to start the slow reconcile', timeoutMs, async () => (await this.world.get(`${this.prefix}:slow-started`)) ?? undefined, pollMs);
    const child = this.workers.find((w) => String(w.pid) === pid);
    if (!child) throw new Error(`the slow reconcile runs in pid ${pid}, which is none of this case's workers`);
    return child;
  }

  /** Runs of `key` that started, in order: `pid:token:startMs`. */
  async starts(key: string): Promise<string[]> {
    return this.world.lrange(`${this.prefix}:starts:${key}`, 0, -1);
  }

  /** Waits until a worker other than `pid` has started `key` after `afterMs` (it took the key over). */
  async takenOver(key: string, pid: number | undefined, afterMs: number, timeoutMs = 60_000): Promise<string> {
    return waitFor(`another worker than ${pid} to take ${key} over`, timeoutMs, async () =>
      (await this.starts(key)).find((s) => {
        const [p, , at] = s.split(':');
        return p !== String(pid) && Number(at) >= afterMs;
      }),
    );
  }

  async check(timeoutMs = 60_000): Promise<CaseReport> {
    const api = this.api;
    const state = this.stateEffects ? effectKeys(this.prefix, QUEUE_NAME).order : undefined;
    const effects =
      api || state
        ? async (records: Parameters<typeof apiReads>[0]) => {
            const s = state ? await stateStamps(this.queueRedis, state) : { reads: [], landed: [] };
            return { reads: [...apiReads(records), ...s.reads], landed: [...(api ? await api.landed() : []), ...s.landed] };
          }
        : undefined;
    return drainAndCheck({ name: this.name, storm: this.storm, redis: this.queueRedis, queue: this.queue, historyDir: this.historyDir, timeoutMs, ...(effects ? { effects } : {}) });
  }

  async close(): Promise<void> {
    this.storm.stop();
    await this.api?.stop();
    for (const w of this.workers.splice(0)) {
      await stopProcess(w, 'SIGKILL');
    }
    await this.queue.close().catch(() => undefined);
    this.queueRedis.disconnect();
    const keys = await this.world.keys(`${this.prefix}*`);
    if (keys.length > 0) await this.world.del(...keys);
    this.world.disconnect();
    rmSync(this.historyDir, { recursive: true, force: true });
  }
}

/**
 * How the effect cases write handler state: through the fenced helper (queue/fenced-write.ts), unless
 * RIPPLE_FAULTS_STATE_WRITE=raw asks for the raw client, as handlers wrote before issue 28 — to watch a case
 * catch the stale writes that helper exists to refuse.
 */
export function stateWriteUnderTest(): 'raw' | 'fenced' {
  return process.env.RIPPLE_FAULTS_STATE_WRITE === 'raw' ? 'raw' : 'fenced';
}

/**
 * The assertions every case makes: no stale effect landed, no overlap, tokens in order, no lost update, every
 * key's last good run woken at its newest event's version, nothing leaked.
 */
export function expectClean(report: CaseReport): void {
  expect({
    staleLanded: report.staleLanded ?? 0,
    overlaps: report.overlaps,
    tokenOrder: report.tokenOrder,
    lost: report.lost,
    woken: report.woken,
    leakedKeys: report.leakedKeys,
  }).toEqual({ staleLanded: 0, overlaps: 0, tokenOrder: 0, lost: 0, woken: 0, leakedKeys: 0 });
}
