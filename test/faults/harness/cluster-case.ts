import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { createRedis, type RedisClient } from '../../../queue/connection.js';
import { WorkQueue } from '../../../queue/work-queue.js';
import { createLogger } from '../../../base/log.js';
import { startProcess, stopProcess } from '../../harness/processes.js';
import { checkHistory } from '../checker.js';
import { readHistory, Storm, type CaseReport } from './storm.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A fault case over several functions' queues on one Redis Cluster: a queue per name (each its own
 * hash tag, so its own slot), a storm per queue on keys `<queue>/obj-<i>` (distinct across queues, so
 * one history judges them all), and fault-worker processes that each serve every queue. The world
 * (versions, starts) is the harness's own Redis, never faulted.
 */
export class ClusterCase {
  readonly prefix: string;
  readonly historyDir: string;
  readonly world: Redis;
  readonly queueRedis: RedisClient;
  readonly queues: WorkQueue[];
  readonly storms: Storm[];
  readonly workers: ChildProcess[] = [];

  constructor(
    readonly name: string,
    readonly queueUrl: string,
    queueNames: string[],
    keysPerQueue: number,
  ) {
    this.prefix = `faults-${name}-${Math.random().toString(36).slice(2, 8)}`;
    this.historyDir = mkdtempSync(path.join(tmpdir(), `ripple-faults-${name}-`));
    this.world = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
    this.queueRedis = createRedis(queueUrl, { maxRetriesPerRequest: null });
    // Redirections and refused connections during the failover are the fault, not news.
    this.queueRedis.on('error', () => undefined);
    const log = createLogger(`faults-${name}`, 'error');
    this.queues = queueNames.map((q) => new WorkQueue({ name: q, connection: this.queueRedis, prefix: this.prefix, log }));
    for (const q of this.queues) q.bull.on('error', () => undefined);
    this.storms = this.queues.map((q) => new Storm(this.world, q, this.prefix, Array.from({ length: keysPerQueue }, (_, i) => `${q.name}/obj-${i}`)));
  }

  get sent(): number {
    return this.storms.reduce((n, s) => n + s.sent, 0);
  }

  /** Starts one fault-worker process serving every queue of the case. */
  async startWorker(env: Record<string, string> = {}): Promise<ChildProcess> {
    const child = await startProcess(
      'test/faults/fixtures/fault-worker.ts',
      { QUEUE_URL: this.queueUrl, WORLD_URL: inject('redisUrl'), PREFIX: this.prefix, QUEUE: this.queues.map((q) => q.name).join(','), HISTORY_DIR: this.historyDir, ...env },
      90_000,
    );
    this.workers.push(child);
    return child;
  }

  /** Each queue's Ripple structures and BullMQ's unfinished job lists, `<queue>:<structure>` → entries. */
  async leftovers(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const q of this.queues) {
      const k = q.keys;
      const r = q.connection;
      const counts = {
        pending: await r.hlen(k.pending),
        pendingSince: await r.hlen(k.pendingSince),
        due: await r.zcard(k.due),
        active: await r.hlen(k.active),
        dirty: await r.zcard(k.dirty),
        failures: await r.hlen(k.failures),
        leases: await r.zcard(k.leases),
        ...Object.fromEntries(Object.entries(await q.bull.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'waiting-children')).map(([s, n]) => [`bull:${s}`, n])),
      };
      for (const [name, n] of Object.entries(counts)) out[`${q.name}:${name}`] = n;
    }
    return out;
  }

  /**
   * Waits (up to `timeoutMs`) until every queue is empty and every changed key's last accepted
   * reconcile read its final version, then judges the whole history (as storm.ts drainAndCheck does
   * for one queue) and prints the counts.
   */
  async check(timeoutMs = 90_000): Promise<CaseReport> {
    const deadline = Date.now() + timeoutMs;
    const finals = new Map<string, number>();
    for (const s of this.storms) for (const [k, v] of await s.finalVersions()) finals.set(k, v);
    let report: CaseReport;
    for (;;) {
      const left = await this.leftovers();
      const leakedKeys = Object.values(left).reduce((a, b) => a + b, 0);
      const history = checkHistory(readHistory(this.historyDir), finals, { woken: true });
      const drained = leakedKeys === 0 && history.lost === 0;
      report = { case: this.name, events: this.sent, ...history, leakedKeys, leftovers: left, drained };
      if (drained || Date.now() > deadline) break;
      await sleep(250);
    }
    const { violations, leftovers, ...counts } = report;
    console.log(`faults: ${JSON.stringify(counts)}`);
    if (violations.length > 0) console.log(`faults: ${this.name} violations (first 10): ${JSON.stringify(violations.slice(0, 10))}`);
    if (report.leakedKeys > 0) console.log(`faults: ${this.name} leftovers: ${JSON.stringify(Object.fromEntries(Object.entries(leftovers).filter(([, n]) => n > 0)))}`);
    return report;
  }

  async close(): Promise<void> {
    for (const s of this.storms) s.stop();
    for (const w of this.workers.splice(0)) await stopProcess(w, 'SIGKILL');
    for (const q of this.queues) await q.close().catch(() => undefined);
    this.queueRedis.disconnect();
    const keys = await this.world.keys(`${this.prefix}*`);
    if (keys.length > 0) await this.world.del(...keys);
    this.world.disconnect();
    rmSync(this.historyDir, { recursive: true, force: true });
  }
}
