import { describe, expect, it } from 'vitest';
import { resolveMaxSurge, resolveMaxUnavailable } from './partition.js';
import { planSurge, type SurgeSlot } from './surge.js';

const s = (ordinal: number, o: Partial<SurgeSlot> = {}): SurgeSlot => ({ ordinal, deleting: false, available: true, updated: false, ...o });

describe('maxSurge values (Kthena #1626)', () => {
  it('an int, or a percentage of replicas rounded up; unset is 0', () => {
    expect(resolveMaxSurge(undefined, 4)).toBe(0);
    expect(resolveMaxSurge(2, 4)).toBe(2);
    expect(resolveMaxSurge('25%', 3)).toBe(1);
    expect(resolveMaxSurge('50%', 3)).toBe(2);
    expect(resolveMaxSurge('0%', 3)).toBe(0);
  });

  it('maxUnavailable may resolve to 0 only with a surge', () => {
    expect(resolveMaxUnavailable(0, 4)).toBe(1);
    expect(resolveMaxUnavailable('10%', 4)).toBe(1);
    expect(resolveMaxUnavailable(0, 4, 1)).toBe(0);
    expect(resolveMaxUnavailable('10%', 4, 1)).toBe(0);
  });
});

describe('planSurge', () => {
  it('no surge configured: nothing', () => {
    expect(planSurge(3, 0, 0, [s(0), s(1), s(2)])).toEqual({ keep: new Set(), create: [] });
  });

  it('creates the surge group at the next ordinal above the replicas while outdated groups remain', () => {
    expect(planSurge(3, 0, 1, [s(0), s(1), s(2)]).create).toEqual([3]);
    expect(planSurge(3, 0, 2, [s(0), s(1), s(2)]).create).toEqual([3, 4]);
    // Never more surge groups than outdated ones.
    expect(planSurge(3, 0, 2, [s(0, { updated: true }), s(1, { updated: true }), s(2)]).create).toEqual([3]);
  });

  it('keeps the surge group while a replaced ordinal is refilled, and lets it go once every stable ordinal is updated and available', () => {
    const surge = s(3, { updated: true });
    const refilling = [s(0, { updated: true }), s(1, { updated: true }), s(2, { updated: true, available: false }), surge];
    expect(planSurge(3, 0, 1, refilling)).toEqual({ keep: new Set([3]), create: [] });
    const missing = [s(0, { updated: true }), s(1, { updated: true }), surge];
    expect(planSurge(3, 0, 1, missing).keep).toEqual(new Set([3]));
    const done = [s(0, { updated: true }), s(1, { updated: true }), s(2, { updated: true }), surge];
    expect(planSurge(3, 0, 1, done)).toEqual({ keep: new Set(), create: [] });
  });

  it('protected ordinals are not part of the rollout: they neither ask for a surge nor hold one', () => {
    // partition 2 of 4: 0 and 1 stay outdated for good.
    expect(planSurge(4, 2, 1, [s(0), s(1), s(2), s(3)]).create).toEqual([4]);
    const done = [s(0), s(1, { available: false }), s(2, { updated: true }), s(3, { updated: true }), s(4, { updated: true })];
    expect(planSurge(4, 2, 1, done)).toEqual({ keep: new Set(), create: [] });
    expect(planSurge(4, 4, 1, [s(0), s(1), s(2), s(3)]).create).toEqual([]);
  });

  it('a surge slot on an old revision or being deleted is not kept (it is an ordinary excess group)', () => {
    const slots = [s(0), s(1), s(2), s(3, { updated: false }), s(4, { updated: true, deleting: true })];
    expect(planSurge(3, 0, 2, slots)).toEqual({ keep: new Set(), create: [] });
  });
});
