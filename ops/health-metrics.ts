import type { RedisClient } from '../queue/connection.js';
import { Gauge, type Registry } from 'prom-client';
import type { WatchHealth } from '../watcher/list-watch.js';
import { redisProblem } from './health.js';

/** What the alert rules (infra/alerts/ripple-rules.yaml) need to see of a process's health. */
export interface HealthMetricSources {
  redis?: Pick<RedisClient, 'ping'>;
  watcher?: { health(): WatchHealth[] };
  /** RIPPLE_WATCH_DOWN_BOUND_MS: exported so the watch-down alert compares against the process's own bound. */
  watchDownBoundMs?: number;
  /** The Lease this process campaigns for (watchers). */
  leader?: { name: string; isLeader(): boolean };
  now?: () => number;
}

/**
 * Scrape-time gauges for the alerts: RedisClient reachability, each watch's state and how long it has been
 * down, and leadership under client-go's name (`leader_election_master_status{name}`), so alerts
 * written for controller-runtime managers read Ripple's watcher too. Computed when /metrics is
 * scraped from what /readyz already reads; nothing is kept between scrapes.
 */
export function registerHealthMetrics(registry: Registry, s: HealthMetricSources): void {
  const registers = [registry];
  const now = s.now ?? Date.now;
  if (s.redis) {
    const redis = s.redis;
    new Gauge({
      name: 'ripple_redis_up',
      help: '1 when Redis answered PING within 2 s at scrape time, else 0',
      registers,
      async collect() {
        this.set((await redisProblem(redis, 2000)) === undefined ? 1 : 0);
      },
    });
  }
  if (s.watcher) {
    const watcher = s.watcher;
    new Gauge({
      name: 'ripple_watch_up',
      help: '1 while the watch stream of a resource is connected, else 0',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        for (const h of watcher.health()) this.set({ resource: h.resource }, h.up ? 1 : 0);
      },
    });
    new Gauge({
      name: 'ripple_watch_synced',
      help: '1 once the first list of a resource has been delivered, else 0',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        for (const h of watcher.health()) this.set({ resource: h.resource }, h.synced ? 1 : 0);
      },
    });
    new Gauge({
      name: 'ripple_watch_down_seconds',
      help: 'How long the watch of a resource has been down (0 while up)',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        const t = now();
        for (const h of watcher.health()) this.set({ resource: h.resource }, h.downSince === undefined ? 0 : Math.max(0, (t - h.downSince) / 1000));
      },
    });
    if (s.watchDownBoundMs !== undefined) {
      const bound = s.watchDownBoundMs / 1000;
      new Gauge({
        name: 'ripple_watch_down_bound_seconds',
        help: 'RIPPLE_WATCH_DOWN_BOUND_MS in seconds: a watch down longer makes the process unready',
        registers,
        collect() {
          this.set(bound);
        },
      });
    }
  }
  if (s.leader) {
    const leader = s.leader;
    new Gauge({
      name: 'leader_election_master_status',
      help: '1 while this process holds the Lease, 0 while it is a follower (client-go name)',
      labelNames: ['name'],
      registers,
      collect() {
        this.set({ name: leader.name }, leader.isLeader() ? 1 : 0);
      },
    });
  }
}
