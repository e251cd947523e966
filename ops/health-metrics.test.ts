import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerHealthMetrics } from './health-metrics.js';

describe('health metrics for the alert rules', () => {
  it('redis, watches (with how long they are down and the bound) and leadership', async () => {
    const registry = new Registry();
    let leader = false;
    registerHealthMetrics(registry, {
      redis: { ping: (): Promise<'PONG'> => Promise.reject(new Error('ECONNREFUSED')) },
      watcher: {
        health: () => [
          { resource: 'pods/v1', up: true, synced: true, relists: 1 },
          { resource: 'modelservings.workload.serving.volcano.sh/v1alpha1', up: false, downSince: 10_000, synced: true, relists: 1 },
        ],
      },
      watchDownBoundMs: 60_000,
      leader: { name: 'ripple-watcher', isLeader: () => leader },
      now: () => 100_000,
    });
    let text = await registry.metrics();
    expect(text).toMatch(/^ripple_redis_up 0$/m);
    expect(text).toMatch(/^ripple_watch_up\{resource="pods\/v1"\} 1$/m);
    expect(text).toMatch(/^ripple_watch_up\{resource="modelservings.workload.serving.volcano.sh\/v1alpha1"\} 0$/m);
    expect(text).toMatch(/^ripple_watch_down_seconds\{resource="modelservings.workload.serving.volcano.sh\/v1alpha1"\} 90$/m);
    expect(text).toMatch(/^ripple_watch_down_seconds\{resource="pods\/v1"\} 0$/m);
    expect(text).toMatch(/^ripple_watch_down_bound_seconds 60$/m);
    expect(text).toMatch(/^leader_election_master_status\{name="ripple-watcher"\} 0$/m);
    leader = true;
    text = await registry.metrics();
    expect(text).toMatch(/^leader_election_master_status\{name="ripple-watcher"\} 1$/m);
  });

  it('a process without a watcher exports no watch or leader series', async () => {
    const registry = new Registry();
    registerHealthMetrics(registry, { redis: { ping: (): Promise<'PONG'> => Promise.resolve('PONG') } });
    const text = await registry.metrics();
    expect(text).toMatch(/^ripple_redis_up 1$/m);
    expect(text).not.toMatch(/ripple_watch_|leader_election/);
  });
});
