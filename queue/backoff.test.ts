import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_BACKOFF } from './backoff.js';

describe('backoffDelay', () => {
  it('doubles from 5 ms per consecutive failure', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(DEFAULT_BACKOFF, n))).toEqual([5, 10, 20, 40, 80]);
  });
  it('is capped at the maximum, even for absurd failure counts', () => {
    expect(backoffDelay(DEFAULT_BACKOFF, 30)).toBe(1_000_000);
    expect(backoffDelay({ baseMs: 5, maxMs: 300 }, 10_000)).toBe(300);
  });
  it('is zero before any failure', () => {
    expect(backoffDelay(DEFAULT_BACKOFF, 0)).toBe(0);
  });
});
