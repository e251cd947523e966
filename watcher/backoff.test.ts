import { describe, expect, it } from 'vitest';
import { ReconnectBackoff } from './backoff.js';

describe('ReconnectBackoff', () => {
  it('grows from 800 ms to a 30 s cap, with jitter between base and twice base', () => {
    const low = new ReconnectBackoff(undefined, () => 0);
    expect([0, 1, 2, 3, 4, 5, 6].map((i) => low.next(i))).toEqual([800, 1600, 3200, 6400, 12800, 25600, 30000]);
    const high = new ReconnectBackoff(undefined, () => 0.5);
    expect(high.next(0)).toBe(1200);
    expect(high.next(1)).toBe(2400);
  });
  it('starts over after two quiet minutes', () => {
    const b = new ReconnectBackoff(undefined, () => 0);
    b.next(0);
    b.next(1);
    expect(b.next(2)).toBe(3200);
    expect(b.next(2 + 121_000)).toBe(800);
  });
});
