import { describe, expect, it } from 'vitest';
import { readinessProblems } from './health.js';

describe('readiness problems', () => {
  it('are shown to anyone, so URLs in them lose their credentials', async () => {
    const problems = await readinessProblems({
      redis: { ping: (): Promise<'PONG'> => Promise.reject(new Error('connect to redis://:hunter2@redis:6379 refused')) },
      watcher: { health: () => [{ resource: 'pods', up: false, synced: false, relists: 0, lastError: 'GET https://admin:pw@10.0.0.1/api/v1/pods: 401' }] },
      watchDownBoundMs: 60_000,
      watchStallBoundMs: 600_000,
    });
    expect(problems).toEqual(['redis: connect to redis://[redacted]@redis:6379 refused', 'watch pods: not synced yet (GET https://[redacted]@10.0.0.1/api/v1/pods: 401)']);
  });
});
