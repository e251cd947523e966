import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import type { WorkQueue } from '../../../queue/work-queue.js';
import { checkEffects, checkHistory, parseHistory, type EffectsReport, type HistoryReport, type ReconcileRecord, type Stamp } from '../checker.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The watch-event side of a fault case: each event bumps one object's version in the world, then
 * enqueues its key (WorkQueue.add), as a watcher would. An add that fails (the queue's Redis is down or
 * failing over) is retried until it lands, as the watcher holds an event it could not deliver: an event
 * the driver dropped would be the driver's loss, not the queue's.
 */
export class Storm {
  sent = 0;
  addRetries = 0;
  private stopped = false;

  constructor(
    private readonly world: Redis,
    private readonly queue: WorkQueue,
    private readonly prefix: string,
    readonly keys: string[],
  ) {}

  /**
   * One event for `key` now. It carries the object's new version, as the watcher passes an event's
   * resourceVersion, so the woken-at path (ReconcileInfo.minResourceVersion) runs under every fault too.
   */
  async event(key: string): Promise<void> {
    const version = await this.world.incr(`${this.prefix}:version:${key}`);
    const deadline = Date.now() + 90_000;
    for (;;) {
      try {
        await this.queue.add(key, 0, 'event', String(version));
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        this.addRetries++;
        await sleep(100);
      }
    }
    this.sent++;
  }

  /** Bursts of events on random keys with short random pauses, until `events` were sent or stop(). */
  async run(events: number, maxBurst = 40): Promise<void> {
    const target = this.sent + events;
    while (!this.stopped && this.sent < target) {
      const burst = Math.min(target - this.sent, 1 + Math.floor(Math.random() * maxBurst));
      await Promise.all(Array.from({ length: burst }, () => this.event(this.keys[Math.floor(Math.random() * this.keys.length)]!)));
      await sleep(5 + Math.floor(Math.random() * 20));
    }
  }

  stop(): void {
    this.stopped = true;
  }

  async finalVersions(): Promise<Map<string, number>> {
    const values = await this.world.mget(...this.keys.map((k) => `${this.prefix}:version:${k}`));
    return new Map(this.keys.map((k, i) => [k, Number(values[i] ?? '0')]));
  }
}

/** Every history line the workers of one case appended. */
export function readHistory(dir: string): ReconcileRecord[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => parseHistory(readFileSync(path.join(dir, f), 'utf8')));
}

/**
 * What the queue left behind: each of Ripple's per-key structures (`seq`, a counter, is not one) and
 * BullMQ's unfinished job lists. After a drain all must be empty.
 */
export async function leftovers(redis: Redis, queue: WorkQueue): Promise<Record<string, number>> {
  const k = queue.keys;
  const out: Record<string, number> = {};
  for (const [name, type] of [
    ['pending', 'hash'],
    ['pendingSince', 'hash'],
    ['due', 'zset'],
    ['active', 'hash'],
    ['dirty', 'zset'],
    ['failures', 'hash'],
    ['leases', 'zset'],
  ] as const) {
    const key = k[name];
    out[name] = type === 'hash' ? await redis.hlen(key) : await redis.zcard(key);
  }
  const counts = await queue.bull.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'waiting-children');
  for (const [state, n] of Object.entries(counts)) out[`bull:${state}`] = n;
  return out;
}

/** What the leaked entries are, for the failure message: each non-empty structure and the state of the jobs it names. */
async function leftoverDetail(redis: Redis, queue: WorkQueue): Promise<Record<string, unknown>> {
  const k = queue.keys;
  const pending = await redis.hgetall(k.pending);
  const active = await redis.hgetall(k.active);
  const jobs: Record<string, string> = {};
  for (const id of [...Object.values(pending), ...Object.values(active).map((v) => v.slice(v.indexOf('|') + 1))]) {
    jobs[id] = await queue.bull.getJobState(id);
  }
  return {
    pending,
    pendingSince: await redis.hgetall(k.pendingSince),
    // '-1' as a string: ioredis 6 types ZRANGE's stop as a string (Redis reads both alike).
    due: await redis.zrange(k.due, 0, '-1', 'WITHSCORES'),
    active,
    dirty: await redis.zrange(k.dirty, 0, '-1', 'WITHSCORES'),
    failures: await redis.hgetall(k.failures),
    leases: await redis.zrange(k.leases, 0, '-1', 'WITHSCORES'),
    jobs,
    now: await redis.time(),
  };
}

export interface CaseReport extends HistoryReport, Partial<Omit<EffectsReport, 'violations'>> {
  case: string;
  events: number;
  leakedKeys: number;
  leftovers: Record<string, number>;
  drained: boolean;
}

/**
 * Waits (up to `timeoutMs`) for the queue to settle — nothing left in it, every changed key's last
 * accepted reconcile read its final version — then judges the whole history. It returns the report
 * even when the wait runs out, so the case prints its counts and its assertions say what is wrong.
 */
export async function drainAndCheck(opts: {
  name: string;
  storm: Storm;
  redis: Redis;
  queue: WorkQueue;
  historyDir: string;
  timeoutMs?: number;
  /** The servers' record of the case's effects (test/faults/harness/effects.ts), judged once the queue settled. */
  effects?: (records: readonly ReconcileRecord[]) => Promise<{ reads: Stamp[]; landed: Stamp[] }>;
}): Promise<CaseReport> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const finals = await opts.storm.finalVersions();
  let report: CaseReport;
  for (;;) {
    const left = await leftovers(opts.redis, opts.queue);
    const leakedKeys = Object.values(left).reduce((a, b) => a + b, 0);
    const history = checkHistory(readHistory(opts.historyDir), finals, { woken: true });
    const drained = leakedKeys === 0 && history.lost === 0;
    report = { case: opts.name, events: opts.storm.sent, ...history, leakedKeys, leftovers: left, drained };
    if (drained || Date.now() > deadline) break;
    await sleep(250);
  }
  if (opts.effects) {
    const records = readHistory(opts.historyDir);
    const { reads, landed } = await opts.effects(records);
    const { violations, ...counts } = checkEffects(reads, landed, records);
    report = { ...report, ...counts, violations: [...report.violations, ...violations] };
  }
  // Counts first, one line, for the CI log and the closing note.
  const { violations, leftovers: left, ...counts } = report;
  console.log(`faults: ${JSON.stringify(counts)}`);
  // Stale effects, overlaps and lost updates first: a history without tokens has a token-order line per reconcile.
  const rank = { 'stale-effect': 0, overlap: 1, lost: 2, woken: 3, 'token-order': 4 } as const;
  const worst = [...violations].sort((a, b) => rank[a.kind] - rank[b.kind]).slice(0, 10);
  if (violations.length > 0) console.log(`faults: ${opts.name} violations (first 10): ${JSON.stringify(worst)}`);
  if (report.leakedKeys > 0) console.log(`faults: ${opts.name} leftovers: ${JSON.stringify(left)} ${JSON.stringify(await leftoverDetail(opts.redis, opts.queue))}`);
  return report;
}
