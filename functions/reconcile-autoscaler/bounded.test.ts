import { describe, expect, it } from 'vitest';
import { mapBounded } from './bounded.js';

describe('mapBounded (issue 14 scenario 9: bounded Prometheus query concurrency)', () => {
  it('never has more than the limit in flight, and keeps the input order', async () => {
    let inFlight = 0;
    let peak = 0;
    const out = await mapBounded([5, 1, 4, 2, 3, 0, 6], 3, async (n) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, n));
      inFlight--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 0, 60]);
    expect(peak).toBe(3);
  });

  it('handles an empty list', async () => {
    expect(await mapBounded([], 4, () => Promise.resolve(1))).toEqual([]);
  });
});
