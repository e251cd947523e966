import { describe, expect, it } from 'vitest';
import { podFacts, type ObservedRoleInstance, type PodFacts } from './observed.js';
import { groupLostInstance, instanceHealth, recoveryFor } from './recovery.js';
import { T0, pod, type PodOptions } from './test-fixtures.js';

const facts = (o: Partial<PodOptions>): PodFacts => podFacts(pod({ group: 'llm-0', role: 'p', index: 0, ...o }), 'llm') as PodFacts;
const inst = (...pods: PodFacts[]): ObservedRoleInstance => ({ roleName: 'p', roleId: 'p-0', index: 0, pods });

describe('instance health', () => {
  it('is healthy when every pod runs', () => {
    expect(instanceHealth(inst(facts({ podIndex: 0 }), facts({ podIndex: 1 })), 2, 0, T0, 'Running').broken).toBe(false);
  });

  it('breaks at once on a failed pod with no grace period', () => {
    const failed = facts({ podIndex: 1, phase: 'Failed', ready: false });
    const h = instanceHealth(inst(facts({ podIndex: 0 }), failed), 2, 0, T0, 'Running');
    expect(h.broken).toBe(true);
    expect(h.failedPods.map((p) => p.name)).toEqual([failed.name]);
  });

  it('waits restartGracePeriodSeconds from when the pod stopped being ready', () => {
    const crashing = facts({ podIndex: 1, phase: 'Running', ready: false, restarts: 2, notReadySince: T0 });
    const early = instanceHealth(inst(facts({ podIndex: 0 }), crashing), 2, 30, T0 + 10_000, 'Running');
    expect(early.broken).toBe(false);
    expect(early.recheckAt).toBe(T0 + 30_000);
    expect(instanceHealth(inst(facts({ podIndex: 0 }), crashing), 2, 30, T0 + 30_000, 'Running').broken).toBe(true);
  });

  it('does not treat a restarted pod that is ready again as failed', () => {
    expect(instanceHealth(inst(facts({ restarts: 3 })), 1, 0, T0, 'Running').broken).toBe(false);
  });

  it('breaks when one pod of a running instance is being deleted', () => {
    expect(instanceHealth(inst(facts({ podIndex: 0 }), facts({ podIndex: 1, terminating: true })), 2, 0, T0, 'Running').broken).toBe(true);
  });

  it('breaks when a pod of a Running instance is gone, but not while the instance is being created', () => {
    expect(instanceHealth(inst(facts({ podIndex: 0 })), 2, 0, T0, 'Running').broken).toBe(true);
    expect(instanceHealth(inst(facts({ podIndex: 0 })), 2, 0, T0, 'Creating').broken).toBe(false);
    expect(instanceHealth(inst(facts({ podIndex: 0 })), 2, 0, T0, undefined).broken).toBe(false);
  });
});

describe('recovery policies', () => {
  const failed = facts({ podIndex: 1, phase: 'Failed', ready: false });
  const health = instanceHealth(inst(facts({ podIndex: 0 }), failed), 2, 0, T0, 'Running');

  it('recreates the group, the role instance, or only the failed pod', () => {
    expect(recoveryFor('ServingGroupRecreate', health)).toEqual({ kind: 'recreateGroup' });
    expect(recoveryFor('RoleRecreate', health)).toEqual({ kind: 'recreateInstance' });
    expect(recoveryFor('None', health)).toEqual({ kind: 'deletePods', pods: [failed] });
  });

  it('under None, leaves a terminating pod alone (it is refilled once gone)', () => {
    const h = instanceHealth(inst(facts({ podIndex: 0 }), facts({ podIndex: 1, terminating: true })), 2, 0, T0, 'Running');
    expect(recoveryFor('None', h)).toEqual({ kind: 'none' });
  });

  it('rebuilds a ServingGroup that lost a whole role instance, but not on scale down', () => {
    const live = inst(facts({ index: 0 }));
    const dying = { ...inst(facts({ index: 1, terminating: true })), roleId: 'p-1', index: 1 };
    expect(groupLostInstance([live, dying], 2, 0)).toBe(true);
    expect(groupLostInstance([live, dying], 1, 0)).toBe(false);
    expect(groupLostInstance([live], 2, 1)).toBe(true);
    expect(groupLostInstance([live], 2, 0)).toBe(false);
  });
});
