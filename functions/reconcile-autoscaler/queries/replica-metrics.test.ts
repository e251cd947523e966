import { describe, expect, it } from 'vitest';
import { joinReplicaMetrics } from './replica-metrics.js';

describe('joinReplicaMetrics', () => {
  it('joins KV and queue per pod, a missing value counting 0, unowned pods dropped', () => {
    const kv = new Map([['a-1', 0.5], ['b-1', 0.2], ['stray', 0.9]]);
    const queue = new Map([['a-1', 2], ['a-2', 4]]);
    const owners = new Map([['a-1', 'a'], ['a-2', 'a'], ['b-1', 'b']]);
    expect(joinReplicaMetrics(kv, queue, owners)).toEqual([
      { podName: 'a-1', variantName: 'a', kvCacheUsage: 0.5, queueLength: 2 },
      { podName: 'a-2', variantName: 'a', kvCacheUsage: 0, queueLength: 4 },
      { podName: 'b-1', variantName: 'b', kvCacheUsage: 0.2, queueLength: 0 },
    ]);
    expect(joinReplicaMetrics(kv, queue, { 'b-1': 'b' })).toHaveLength(1);
  });
});
