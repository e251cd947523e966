import { describe, expect, it } from 'vitest';
import { selectForReplacement, selectRoleInstancesForReplacement, type RollingCandidate } from './rolling-update.js';

const c = (ordinal: number, o: Partial<RollingCandidate> = {}): RollingCandidate => ({
  ordinal,
  available: true,
  deleting: false,
  replaceable: true,
  ...o,
});
const picked = (xs: RollingCandidate[]) => xs.map((x) => x.ordinal);

describe('ServingGroupRollingUpdate budget', () => {
  it('replaces maxUnavailable groups at a time, highest ordinal first', () => {
    const all = [c(0), c(1), c(2), c(3)];
    expect(picked(selectForReplacement(all, 4 - 2))).toEqual([3, 2]);
    expect(picked(selectForReplacement(all, 4 - 1))).toEqual([3]);
  });

  it('waits while the replacements are not ready', () => {
    // 2 and 3 were recreated on the new revision and are starting.
    const all = [c(0), c(1), c(2, { replaceable: false, available: false }), c(3, { replaceable: false, available: false })];
    expect(picked(selectForReplacement(all, 2))).toEqual([]);
  });

  it('counts groups already being deleted against the budget', () => {
    const all = [c(0), c(1), c(2, { deleting: true, available: false }), c(3, { deleting: true, available: false })];
    expect(picked(selectForReplacement(all, 2))).toEqual([]);
  });

  it('replaces unavailable outdated groups first (they cost no availability)', () => {
    const all = [c(0), c(1, { available: false }), c(2), c(3)];
    expect(picked(selectForReplacement(all, 3))).toEqual([1]);
    expect(picked(selectForReplacement(all, 2))).toEqual([1, 3]);
  });

  it('never lets a broken protected group push availability below the minimum', () => {
    // 0 is protected by the partition and unavailable: only 3 of 5 may stay available with maxUnavailable 2.
    const all = [c(0, { replaceable: false, available: false }), c(1, { replaceable: false }), c(2), c(3), c(4)];
    expect(picked(selectForReplacement(all, 5 - 2))).toEqual([4]);
  });

  it('leaves protected and updated groups alone', () => {
    const all = [c(0, { replaceable: false }), c(1, { replaceable: false }), c(2)];
    expect(picked(selectForReplacement(all, 0))).toEqual([2]);
  });
});

describe('RoleRollingUpdate budget per role', () => {
  const four = () => [c(0), c(1), c(2), c(3)];

  it('replaces every outdated instance at once when maxUnavailable is unset', () => {
    expect(picked(selectRoleInstancesForReplacement(four(), 4, undefined))).toEqual([0, 1, 2, 3]);
  });

  it('replaces maxUnavailable instances at a time', () => {
    expect(picked(selectRoleInstancesForReplacement(four(), 4, 2))).toEqual([3, 2]);
  });

  it('replaces a Creating outdated instance first', () => {
    const insts = [c(0), c(1, { available: false }), c(2), c(3)];
    expect(picked(selectRoleInstancesForReplacement(insts, 4, 1))).toEqual([1]);
  });

  it('counts Deleting and not-ready new instances as unavailable', () => {
    const insts = [c(0), c(1), c(2, { deleting: true, available: false }), c(3, { replaceable: false, available: false })];
    expect(picked(selectRoleInstancesForReplacement(insts, 4, 2))).toEqual([]);
    expect(picked(selectRoleInstancesForReplacement(insts, 4, 3))).toEqual([1]);
  });
});
