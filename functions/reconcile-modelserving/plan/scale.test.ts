import { describe, expect, it } from 'vitest';
import { missingOrdinals, ordinalsToCreate, scaleDecision, selectForScaleDown, type ScaleDownCandidate } from './scale.js';

const ready = (ordinal: number, deletionCost = 0): ScaleDownCandidate => ({ ordinal, ready: true, deletionCost });
const notReady = (ordinal: number, deletionCost = 0): ScaleDownCandidate => ({ ordinal, ready: false, deletionCost });
const kept = (all: ScaleDownCandidate[], target: number, partition = 0) => {
  const removed = new Set(selectForScaleDown(all, all.length - target, partition).map((c) => c.ordinal));
  return all.map((c) => c.ordinal).filter((o) => !removed.has(o));
};

describe('missing ordinals', () => {
  it('lists the free ordinals in ascending order', () => {
    expect(missingOrdinals(3, [])).toEqual([0, 1, 2]);
    expect(missingOrdinals(5, [0, 2, 4])).toEqual([1, 3]);
    expect(missingOrdinals(5, [0, 2, 4], 1)).toEqual([1]);
    expect(missingOrdinals(4, [2, 0, 2])).toEqual([1, 3]);
  });

  it('ignores out-of-range ordinals', () => {
    expect(missingOrdinals(3, [-1, 5, 1])).toEqual([0, 2]);
    expect(missingOrdinals(0, [])).toEqual([]);
  });

  it('stays lazy for a huge expected count', () => {
    expect(missingOrdinals(2147483647, [0, 1], 2)).toEqual([2, 3]);
  });
});

describe('ServingGroup scale up', () => {
  it('fills the lowest free ordinals, only up to the shortfall', () => {
    expect(ordinalsToCreate(2, [])).toEqual([0, 1]);
    expect(ordinalsToCreate(3, [0])).toEqual([1, 2]);
    expect(ordinalsToCreate(4, [0, 5])).toEqual([1, 2]);
    expect(ordinalsToCreate(3, [10])).toEqual([0, 1]);
    expect(ordinalsToCreate(2, [0, 1])).toEqual([]);
    expect(ordinalsToCreate(1, [0, 1])).toEqual([]);
  });

  it('counts role instances that are still being deleted (they keep their index)', () => {
    // Role scale up {0, 1 (Deleting)} -> 3 creates only index 2.
    expect(ordinalsToCreate(3, [0, 1])).toEqual([2]);
  });
});

describe('scale down order', () => {
  it('keeps the lowest ordinals when all are equal', () => {
    expect(kept([ready(0), ready(1), ready(2), ready(3)], 2)).toEqual([0, 1]);
    expect(kept([ready(0), ready(2), ready(5), ready(8)], 2)).toEqual([0, 2]);
  });

  it('removes a not-ready group before a ready one, whatever its cost', () => {
    expect(kept([ready(0), notReady(1, 1000), ready(2)], 2)).toEqual([0, 2]);
  });

  it('among ready groups removes the lowest deletion cost first (negative included)', () => {
    expect(kept([ready(0, 5), ready(1, -3), ready(2, 1)], 2)).toEqual([0, 2]);
  });

  it('breaks equal costs by removing the higher ordinal', () => {
    expect(kept([ready(0, 2), ready(1, 2), ready(2, 9)], 2)).toEqual([0, 2]);
  });
});

describe('scale down with a partition', () => {
  const five = () => [ready(0), notReady(1), ready(2), ready(3), ready(4)];

  it('removes unprotected ordinals first, even when a protected one is not ready', () => {
    expect(kept(five(), 3, 3)).toEqual([0, 1, 2]);
  });

  it('removes protected ordinals only when needed, cheapest first', () => {
    const all = [ready(0, 10), ready(1, 1), ready(2, 5), ready(3), ready(4)];
    expect(selectForScaleDown(all, 3, 3).map((c) => c.ordinal)).toEqual([4, 3, 1]);
  });

  it('orders as usual when the partition covers every group', () => {
    const all = [ready(0, 3), ready(1, 1), ready(2, 2), ready(3, 4)];
    expect(kept(all, 2, 5)).toEqual([0, 3]);
  });
});

describe('scale decision with protected ordinals (issue 13 scenario 2)', () => {
  it('recreates a missing protected ordinal and removes one unprotected in its place', () => {
    expect(scaleDecision(4, [0, 1, 3, 4], 4, 3)).toEqual({ remove: 1, create: [2] });
    expect(scaleDecision(4, [0, 1, 3, 4, 5], 5, 3)).toEqual({ remove: 2, create: [2] });
  });

  it('is the plain scale up / down without a missing protected ordinal', () => {
    expect(scaleDecision(4, [0, 1, 2], 3, 3)).toEqual({ remove: 0, create: [3] });
    expect(scaleDecision(2, [0, 1, 2, 3], 4, 1)).toEqual({ remove: 2, create: [] });
    expect(scaleDecision(4, [0, 2], 2, 0)).toEqual({ remove: 0, create: [1, 3] });
  });

  it('protects only ordinals below replicas', () => {
    expect(scaleDecision(2, [1, 5], 2, 3)).toEqual({ remove: 1, create: [0] });
    expect(scaleDecision(0, [0], 1, 3)).toEqual({ remove: 1, create: [] });
  });
});
