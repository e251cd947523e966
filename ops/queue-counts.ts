import { Gauge, type Registry } from 'prom-client';
import { readForScrape } from '../queue/scrape.js';
import type { WorkQueue } from '../queue/work-queue.js';

/**
 * The BullMQ states a scaler must see. `wait` alone (what KEDA's redis list scaler reads) misses
 * delayed jobs (requeueAfter, backoff retries, the resync tick) and active ones, so scaling on it
 * lets workers go away while work is pending or running.
 */
export const JOB_STATES = ['waiting', 'delayed', 'prioritized', 'active', 'waiting-children', 'completed', 'failed'] as const;
export type JobState = (typeof JOB_STATES)[number];

export const JOB_COUNT_METRIC = 'bullmq_job_count';

/** Jobs still to run or running: what a scaler and `ripple status` call the backlog. */
export function backlogOf(counts: Record<JobState, number>): number {
  return counts.waiting + counts.prioritized + counts.delayed + counts.active;
}

export async function jobCounts(queue: WorkQueue): Promise<Record<JobState, number>> {
  const raw = await queue.bull.getJobCounts(...JOB_STATES);
  const out = {} as Record<JobState, number>;
  for (const s of JOB_STATES) out[s] = raw[s] ?? 0;
  return out;
}

/**
 * Registers `bullmq_job_count{queue,state}` — the name and labels of BullMQ's own
 * `exportPrometheusMetrics`, so existing BullMQ dashboards and alerts read it — computed from Redis at
 * scrape time. Only one process per deployment should export it (the ops server): the counts are
 * global, and workers exporting them too would multiply every sum.
 */
export function registerJobCounts(registry: Registry, queues: () => WorkQueue[]): void {
  if (registry.getSingleMetric(JOB_COUNT_METRIC)) return;
  new Gauge({
    name: JOB_COUNT_METRIC,
    help: 'Number of jobs in the queue by state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      const all = queues();
      // Bounded: with Redis down the read would wait for ever and hang /metrics; a queue whose counts
      // do not come in time is left out of this scrape.
      const counts = await Promise.all(all.map((q) => readForScrape(() => jobCounts(q))));
      all.forEach((q, i) => {
        const c = counts[i];
        if (c) for (const s of JOB_STATES) this.set({ queue: q.name, state: s }, c[s]);
      });
    },
  });
}
