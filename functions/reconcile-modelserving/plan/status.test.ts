import { describe, expect, it } from 'vitest';
import type { Condition } from '../../../api/modelserving.js';
import { computeStatus, conditionVerdict, currentRevisionOf, deadlineGroups, nextConditions, type StatusGroup } from './status.js';

const g = (ordinal: number, revision: string, o: Partial<StatusGroup> = {}): StatusGroup => ({
  ordinal,
  revision,
  deleting: false,
  available: true,
  ...o,
});

describe('status revisions', () => {
  it('keeps the old revision current while a new one rolls out', () => {
    expect(currentRevisionOf([g(0, 'v1'), g(1, 'v1'), g(2, 'v1')], 'v2', undefined)).toBe('v1');
    expect(currentRevisionOf([g(0, 'v1'), g(1, 'v1'), g(2, 'v2')], 'v2', 'v1')).toBe('v1');
  });

  it('makes the update revision current once every group has it', () => {
    expect(currentRevisionOf([g(0, 'v2'), g(1, 'v2')], 'v2', 'v1')).toBe('v2');
  });

  it('picks the most common old revision when the previous one is gone', () => {
    expect(currentRevisionOf([g(0, 'v1'), g(1, 'v1'), g(2, 'v0'), g(3, 'v2')], 'v2', undefined)).toBe('v1');
    expect(currentRevisionOf([g(0, 'v1'), g(1, 'v1'), g(2, 'v0')], 'v2', 'vx')).toBe('v1');
  });

  it('uses the update revision for both when there are no groups', () => {
    const s = computeStatus({ groups: [], updateRevision: 'v2', partition: 0, problems: [], generation: 3, previous: undefined, labelSelector: 'sel', now: 't' });
    expect([s.currentRevision, s.updateRevision]).toEqual(['v2', 'v2']);
  });

  it('keeps a revision that a group being deleted still runs (issue 13: it may come back on it)', () => {
    expect(currentRevisionOf([g(0, 'v1', { deleting: true }), g(1, 'v2')], 'v2', 'v1')).toBe('v1');
    expect(currentRevisionOf([g(1, 'v2')], 'v2', 'v1')).toBe('v2');
  });

  it('keeps the previous revision while a protected ordinal is missing', () => {
    expect(currentRevisionOf([g(1, 'v2')], 'v2', 'v1', 1)).toBe('v1');
    expect(currentRevisionOf([g(0, 'v2'), g(1, 'v2')], 'v2', 'v1', 1)).toBe('v2');
  });
});

describe('status counts', () => {
  const status = (groups: StatusGroup[], partition = 0) =>
    computeStatus({ groups, updateRevision: 'v2', partition, problems: [], generation: 7, previous: { currentRevision: 'v1' }, labelSelector: 'sel', now: 't' });

  it('counts every group, and only non-deleting ones by revision', () => {
    const s = status([g(0, 'v1'), g(1, 'v1', { available: false }), g(2, 'v2', { available: false }), g(3, 'v1', { deleting: true, available: false })]);
    expect(s).toMatchObject({ replicas: 4, availableReplicas: 1, updatedReplicas: 1, currentReplicas: 2, observedGeneration: 7, labelSelector: 'sel' });
  });

  it('reports currentReplicas = updatedReplicas when the update revision is current', () => {
    expect(status([g(0, 'v2'), g(1, 'v2')])).toMatchObject({ replicas: 2, updatedReplicas: 2, currentReplicas: 2, currentRevision: 'v2' });
  });

  it('partition 3 of 5 scaled down to 3: replicas 3, updated 0, current 3, available 3', () => {
    expect(status([g(0, 'v1'), g(1, 'v1'), g(2, 'v1')], 3)).toMatchObject({ replicas: 3, updatedReplicas: 0, currentReplicas: 3, availableReplicas: 3 });
  });
});

describe('conditions', () => {
  const verdict = (groups: StatusGroup[], partition = 0, problems: string[] = []) =>
    conditionVerdict({ groups, updateRevision: 'v2', partition, problems });

  it('is Available when every group is ready', () => {
    expect(verdict([g(0, 'v2'), g(1, 'v1')], 2)).toEqual({ type: 'Available', reason: 'AllGroupsReady', message: 'All ServingGroups are ready' });
  });

  it('is Progressing when groups are not ready and nothing is outdated', () => {
    expect(verdict([g(0, 'v2'), g(1, 'v2', { available: false })])).toMatchObject({ type: 'Progressing', reason: 'GroupProgressing', message: 'ServingGroups progressing: [1]' });
  });

  it('is UpdateInProgress while groups outside the partition are outdated', () => {
    expect(verdict([g(0, 'v1'), g(1, 'v1', { deleting: true, available: false }), g(2, 'v2')])).toMatchObject({
      type: 'UpdateInProgress',
      reason: 'GroupsUpdating',
      message: 'ServingGroups progressing: [1]; updated: [2]',
    });
    // Outdated groups below the partition are expected to stay outdated.
    expect(verdict([g(0, 'v1'), g(1, 'v2', { available: false })], 1).type).toBe('Progressing');
  });

  it('explains pods that no scheduler picks up', () => {
    expect(verdict([g(0, 'v2', { available: false })], 0, ['2 pod(s) wait']).message).toBe('ServingGroups progressing: [0]; 2 pod(s) wait');
  });

  it('keeps exactly one of the three True and moves lastTransitionTime only on a change', () => {
    const first = nextConditions(undefined, verdict([g(0, 'v2', { available: false })]), 1, 't1');
    expect(first).toEqual([
      { type: 'Progressing', status: 'True', reason: 'GroupProgressing', message: 'ServingGroups progressing: [0]', lastTransitionTime: 't1', observedGeneration: 1 },
    ]);
    const second = nextConditions(first, verdict([g(0, 'v2')]), 1, 't2');
    expect(second.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime])).toEqual([
      ['Available', 'True', 'AllGroupsReady', 't2'],
      ['Progressing', 'False', 'AllGroupsReady', 't2'],
    ]);
    const third = nextConditions(second, verdict([g(0, 'v2')]), 2, 't3');
    expect(third.map((c) => c.lastTransitionTime)).toEqual(['t2', 't2']);
    expect(third.map((c) => c.observedGeneration)).toEqual([2, 2]);
  });

  it('keeps conditions of other types', () => {
    const other: Condition = { type: 'Ready', status: 'True', reason: 'X', message: '', lastTransitionTime: 't0' };
    expect(nextConditions([other], verdict([g(0, 'v2')]), 1, 't1')[0]).toBe(other);
  });
});

describe('progress deadline groups', () => {
  const past = { observedGeneration: 4, lastProgressTime: '2026-01-01T00:00:00.000Z', replicas: 3, updatedReplicas: 3, availableReplicas: 1 };
  const status = (groups: StatusGroup[]) =>
    computeStatus({
      groups,
      updateRevision: 'v2',
      partition: 0,
      problems: [],
      msName: 'llm',
      progressDeadlineSeconds: 60,
      specReplicas: 2,
      generation: 4,
      previous: past,
      labelSelector: 'sel',
      now: '2026-01-01T01:00:00.000Z',
    });
  const progressing = (s: ReturnType<typeof status>) => s.conditions?.find((c) => c.type === 'Progressing');

  it('leaves out groups a scale-down is still deleting, keeps groups replaced in place', () => {
    const groups = [g(0, 'v2', { deleting: true, available: false }), g(1, 'v2'), g(2, 'v2', { deleting: true, available: false })];
    expect(deadlineGroups(groups, 2).map((x) => x.ordinal)).toEqual([0, 1]);
    expect(deadlineGroups(groups, undefined).map((x) => x.ordinal)).toEqual([0, 1, 2]);
    expect(progressing(status(groups))?.message).toMatch(/^ServingGroups llm-0 have made no progress/);
  });

  it('a scale-down whose only unfinished groups are being deleted is complete: no clock, no deadline', () => {
    const s = status([g(0, 'v2'), g(1, 'v2'), g(2, 'v2', { deleting: true, available: false })]);
    expect(s.lastProgressTime).toBeUndefined();
    expect(progressing(s)?.reason).not.toBe('ProgressDeadlineExceeded');
  });
});
