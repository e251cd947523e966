import type { WorkQueue } from '../queue/work-queue.js';
import { readForScrape } from '../queue/scrape.js';
import { redactUrl } from '../base/redact.js';
import type { WatchHealth } from '../watcher/list-watch.js';
import { backlogOf, jobCounts, type JobState } from './queue-counts.js';

/** What this process knows of itself beyond the queues: its watches, its Lease, its workers. */
export interface ProcessStatus {
  mode?: string;
  watches?: () => WatchHealth[];
  leader?: { lease: string; isLeader: () => boolean };
  /** Functions whose workers run in this process, and whether they all still do. */
  workers?: { functions: string[]; running: () => boolean };
}

export interface QueueStatus {
  name: string;
  counts: Record<JobState, number> | null;
  backlog: number | null;
  /** Workers connected to the queue in any process (BullMQ's count); null when Redis did not answer. */
  workers: number | null;
}

export interface StatusBody {
  mode?: string;
  queues: QueueStatus[];
  /** This process's watches; absent when it runs no watcher (then ask a watcher's /readyz). */
  watches?: Array<{ resource: string; up: boolean; synced: boolean; downSeconds: number; lastError?: string }>;
  leader?: { lease: string; isLeader: boolean };
  workers?: { functions: string[]; running: boolean };
}

/**
 * `GET /api/status`, what `ripple status` prints. Read-only and open like the other read routes: counts,
 * states and names, no Redis details beyond how many workers each queue has. Each queue's reads are
 * bounded (as a scrape's), so a Redis outage answers with nulls rather than hanging.
 */
export async function opsStatus(queues: WorkQueue[], p: ProcessStatus, now = Date.now()): Promise<StatusBody> {
  const rows = await Promise.all(
    queues.map(async (q): Promise<QueueStatus> => {
      const [counts, workers] = await Promise.all([readForScrape(() => jobCounts(q)), readForScrape(() => q.bull.getWorkersCount())]);
      return { name: q.name, counts: counts ?? null, backlog: counts ? backlogOf(counts) : null, workers: workers ?? null };
    }),
  );
  return {
    ...(p.mode ? { mode: p.mode } : {}),
    queues: rows,
    ...(p.watches
      ? {
          watches: p.watches().map((h) => ({
            resource: h.resource,
            up: h.up,
            synced: h.synced,
            downSeconds: h.downSince === undefined ? 0 : Math.round((now - h.downSince) / 1000),
            ...(h.lastError ? { lastError: redactUrl(h.lastError) } : {}),
          })),
        }
      : {}),
    ...(p.leader ? { leader: { lease: p.leader.lease, isLeader: p.leader.isLeader() } } : {}),
    ...(p.workers ? { workers: { functions: p.workers.functions, running: p.workers.running() } } : {}),
  };
}
