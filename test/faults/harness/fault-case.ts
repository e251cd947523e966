import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { expect, inject } from 'vitest';
import { createRedis } from '../../../queue/connection.js';
import { WorkQueue } from '../../../queue/work-queue.js';
import { createLogger } from '../../../runtime/log.js';
import { startProcess, stopProcess } from '../../harness/processes.js';
import { waitFor } from '../../harness/sandbox.js';
import { drainAndCheck, Storm, type CaseReport } from './storm.js';

export const QUEUE_NAME = 'faults';

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

  /** The pid of the worker that took the slow reconcile (SLOW_KEY), once it started it. */
  async slowWorker(timeoutMs = 60_000): Promise<ChildProcess> {
    const pid = await waitFor('a worker to start the slow reconcile', timeoutMs, async () => (await this.world.get(`${this.prefix}:slow-started`)) ?? undefined);
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
    return drainAndCheck({ name: this.name, storm: this.storm, redis: this.queueRedis, queue: this.queue, historyDir: this.historyDir, timeoutMs });
  }

  async close(): Promise<void> {
    this.storm.stop();
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

/** The assertions every case makes: no overlap, tokens in order, no lost update, nothing leaked. */
export function expectClean(report: CaseReport): void {
  expect({ overlaps: report.overlaps, tokenOrder: report.tokenOrder, lost: report.lost, leakedKeys: report.leakedKeys }).toEqual({
    overlaps: 0,
    tokenOrder: 0,
    lost: 0,
    leakedKeys: 0,
  });
}
