import { describe, expect, it } from 'vitest';
import {
  InvalidConditionError,
  formatConditionTime,
  isCamelCaseReason,
  parseConditionTime,
  setCondition,
  toCamelCaseReason,
  truncateMessage,
} from './conditions.js';
import type { Condition } from './schema.js';

const t0 = new Date('2026-03-01T12:00:00.000Z');
const later = new Date('2026-03-01T12:05:30.750Z');

function ready(status: Condition['status'], reason: string, message = '', generation = 1): Condition[] {
  return setCondition([], { type: 'Ready', status, reason, message, observedGeneration: generation }, t0);
}

describe('setCondition', () => {
  it('appends a new condition stamped with now (whole seconds) and the generation', () => {
    const out = setCondition([], { type: 'Ready', status: 'False', reason: 'Starting', observedGeneration: 4 }, later);
    expect(out).toEqual([
      {
        type: 'Ready',
        status: 'False',
        reason: 'Starting',
        message: '',
        observedGeneration: 4,
        lastTransitionTime: '2026-03-01T12:05:30Z',
      },
    ]);
  });

  it('moves lastTransitionTime when the status changes', () => {
    const out = setCondition(ready('False', 'Starting'), { type: 'Ready', status: 'True', reason: 'AllComponentsReady' }, later);
    expect(out[0]?.lastTransitionTime).toBe('2026-03-01T12:05:30Z');
    expect(out[0]?.status).toBe('True');
  });

  it('keeps lastTransitionTime when only the reason changes (not a transition)', () => {
    const out = setCondition(ready('False', 'Starting'), { type: 'Ready', status: 'False', reason: 'PodsPending' }, later);
    expect(out[0]?.lastTransitionTime).toBe('2026-03-01T12:00:00Z');
    expect(out[0]?.reason).toBe('PodsPending');
  });

  it('keeps lastTransitionTime when only the message changes', () => {
    const out = setCondition(
      ready('False', 'Starting', '1/3 pods ready'),
      { type: 'Ready', status: 'False', reason: 'Starting', message: '2/3 pods ready' },
      later,
    );
    expect(out[0]?.lastTransitionTime).toBe('2026-03-01T12:00:00Z');
    expect(out[0]?.message).toBe('2/3 pods ready');
  });

  it('updates observedGeneration in place without a transition, and keeps it when not given', () => {
    const bumped = setCondition(
      ready('True', 'AllComponentsReady'),
      { type: 'Ready', status: 'True', reason: 'AllComponentsReady', observedGeneration: 2 },
      later,
    );
    expect(bumped[0]).toMatchObject({ observedGeneration: 2, lastTransitionTime: '2026-03-01T12:00:00Z' });
    const kept = setCondition(bumped, { type: 'Ready', status: 'True', reason: 'AllComponentsReady' }, later);
    expect(kept[0]?.observedGeneration).toBe(2);
  });

  it('keeps the order of the other conditions and does not mutate its input', () => {
    const list = setCondition(
      setCondition([], { type: 'Available', status: 'True', reason: 'AllGroupsReady' }, t0),
      { type: 'Ready', status: 'True', reason: 'AllComponentsReady' },
      t0,
    );
    const snapshot = structuredClone(list);
    const out = setCondition(list, { type: 'Available', status: 'False', reason: 'GroupProgressing' }, later);
    expect(out.map((c) => c.type)).toEqual(['Available', 'Ready']);
    expect(out[1]).toBe(list[1]);
    expect(list).toEqual(snapshot);
  });

  it('rejects reasons and types the API server would reject', () => {
    expect(() => setCondition([], { type: 'Ready', status: 'True', reason: 'all ready' }, t0)).toThrow(InvalidConditionError);
    expect(() => setCondition([], { type: 'Ready', status: 'True', reason: '' }, t0)).toThrow(InvalidConditionError);
    expect(() => setCondition([], { type: 'not valid!', status: 'True', reason: 'Ok' }, t0)).toThrow(InvalidConditionError);
    expect(() =>
      setCondition([], { type: 'example.com/Ready', status: 'True', reason: 'Ok' }, t0),
    ).not.toThrow();
  });

  it('truncates messages longer than metav1 allows', () => {
    const out = setCondition([], { type: 'Ready', status: 'False', reason: 'X', message: 'a'.repeat(40_000) }, t0);
    expect(out[0]?.message.length).toBe(32768);
    expect(truncateMessage('short')).toBe('short');
  });
});

describe('reasons', () => {
  it('accepts one CamelCase word only', () => {
    expect(isCamelCaseReason('InsufficientCapacity')).toBe(true);
    expect(isCamelCaseReason('insufficientCapacity')).toBe(false);
    expect(isCamelCaseReason('Insufficient_Capacity')).toBe(false);
    expect(isCamelCaseReason('')).toBe(false);
  });

  it('folds foreign reasons into CamelCase and falls back when nothing is left', () => {
    expect(toCamelCaseReason('ImagePullBackOff', 'Failed')).toBe('ImagePullBackOff');
    expect(toCamelCaseReason('image pull-error', 'Failed')).toBe('ImagePullError');
    expect(toCamelCaseReason('503 service_unavailable', 'Failed')).toBe('ServiceUnavailable');
    expect(toCamelCaseReason('!!!', 'Failed')).toBe('Failed');
    expect(toCamelCaseReason(undefined, 'Starting')).toBe('Starting');
  });
});

describe('condition times', () => {
  it('formats as metav1.Time does and parses back', () => {
    expect(formatConditionTime(later)).toBe('2026-03-01T12:05:30Z');
    expect(parseConditionTime('2026-03-01T12:05:30Z')).toBe(Date.parse('2026-03-01T12:05:30Z'));
    expect(parseConditionTime('2026-03-01T14:05:30+02:00')).toBe(Date.parse('2026-03-01T12:05:30Z'));
    expect(parseConditionTime('yesterday')).toBeUndefined();
    expect(parseConditionTime(undefined)).toBeUndefined();
  });
});
