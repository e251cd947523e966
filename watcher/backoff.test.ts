import { describe, expect, it } from 'vitest';
import { closedAtOnce, ReconnectBackoff } from './backoff.js';

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

describe('closedAtOnce (clean-close hot loop)', () => {
  it('a watch that ended under a second with nothing on it is backed off', () => {
    expect(closedAtOnce(5, 0)).toBe(true);
    expect(closedAtOnce(999, 0)).toBe(true);
  });
  it('a watch that carried a line (an event or a bookmark), or lasted, is resumed at once', () => {
    expect(closedAtOnce(5, 1)).toBe(false);
    expect(closedAtOnce(1000, 0)).toBe(false);
    expect(closedAtOnce(300_000, 0)).toBe(false);
  });
});
