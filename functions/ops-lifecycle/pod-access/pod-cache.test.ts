import { describe, expect, it } from 'vitest';
import { sweepGone } from './pod-cache.js';

describe('sweepGone (handled records of Pods the cache no longer holds)', () => {
  it('keeps records of held Pods and drops a missing key only at its second tick', () => {
    const handled = new Map<string, unknown>([
      ['ns/held', 1],
      ['ns/gone', 2],
    ]);
    const held = new Set(['ns/held']);
    const first = sweepGone(handled, (k) => held.has(k), new Set());
    // First seen missing: kept (a Pod written just before the cache took it in keeps its floor).
    expect([...handled.keys()]).toEqual(['ns/held', 'ns/gone']);
    expect([...first]).toEqual(['ns/gone']);
    const second = sweepGone(handled, (k) => held.has(k), first);
    expect([...handled.keys()]).toEqual(['ns/held']);
    expect(second.size).toBe(0);
  });

  it('a suspect the store took in meanwhile is kept and no longer suspected', () => {
    const handled = new Map<string, unknown>([['ns/late', 1]]);
    const held = new Set<string>();
    const first = sweepGone(handled, (k) => held.has(k), new Set());
    held.add('ns/late');
    const second = sweepGone(handled, (k) => held.has(k), first);
    expect([...handled.keys()]).toEqual(['ns/late']);
    expect(second.size).toBe(0);
  });
});
