import { describe, expect, it } from 'vitest';
import type { Condition } from './schema.js';
import { type PolarityOf, conditionTransitions, statusChanged } from './transitions.js';

function cond(type: string, status: Condition['status'], reason = 'R', message = '', ltt = '2026-03-01T12:00:00Z'): Condition {
  return { type, status, reason, message, lastTransitionTime: ltt, observedGeneration: 1 };
}

const polarity: PolarityOf = (type) => (type === 'Stalled' ? 'negative' : type.endsWith('Ready') ? 'positive' : undefined);

describe('conditionTransitions', () => {
  it('lists status changes only: a reason or message change is not a transition', () => {
    const before = [cond('Ready', 'False', 'Starting', '1/3')];
    const after = [cond('Ready', 'False', 'PodsPending', '2/3')];
    expect(conditionTransitions(before, after, polarity)).toEqual([]);
  });

  it('gives a Warning when a positive condition fails and a Normal when it recovers', () => {
    expect(conditionTransitions([cond('Ready', 'True')], [cond('Ready', 'False', 'AuthFailed', 'bad token')], polarity)).toEqual([
      { type: 'Ready', from: 'True', to: 'False', reason: 'AuthFailed', message: 'bad token', eventType: 'Warning' },
    ]);
    expect(conditionTransitions([cond('Ready', 'False')], [cond('Ready', 'True', 'AllComponentsReady')], polarity)).toEqual([
      { type: 'Ready', from: 'False', to: 'True', reason: 'AllComponentsReady', message: '', eventType: 'Normal' },
    ]);
    expect(conditionTransitions([cond('Ready', 'True')], [cond('Ready', 'Unknown')], polarity)[0]?.eventType).toBe('Warning');
    expect(conditionTransitions([cond('Ready', 'Unknown')], [cond('Ready', 'True')], polarity)[0]?.eventType).toBe('Normal');
    // False → Unknown: still not healthy, nothing new to tell.
    expect(conditionTransitions([cond('Ready', 'False')], [cond('Ready', 'Unknown')], polarity)[0]?.eventType).toBeUndefined();
  });

  it('reads negative polarity the other way round', () => {
    expect(conditionTransitions([cond('Stalled', 'False')], [cond('Stalled', 'True')], polarity)[0]?.eventType).toBe('Warning');
    expect(conditionTransitions([cond('Stalled', 'True')], [cond('Stalled', 'False')], polarity)[0]?.eventType).toBe('Normal');
  });

  it('reports a condition appearing; only an abnormal first state calls for an Event', () => {
    const out = conditionTransitions(undefined, [cond('ModelReady', 'True'), cond('CacheReady', 'False', 'InvalidSpec')], polarity);
    expect(out).toEqual([
      { type: 'ModelReady', from: undefined, to: 'True', reason: 'R', message: '' },
      { type: 'CacheReady', from: undefined, to: 'False', reason: 'InvalidSpec', message: '', eventType: 'Warning' },
    ]);
  });

  it('lets the caller say which first appearances are mere progress', () => {
    const progress = (c: Condition) => c.reason !== 'Starting';
    expect(conditionTransitions(undefined, [cond('Ready', 'False', 'Starting')], polarity, progress)[0]?.eventType).toBeUndefined();
    expect(conditionTransitions(undefined, [cond('Ready', 'False', 'InvalidSpec')], polarity, progress)[0]?.eventType).toBe('Warning');
    // From a normal state it is always a failure.
    expect(conditionTransitions([cond('Ready', 'True')], [cond('Ready', 'False', 'Starting')], polarity, progress)[0]?.eventType).toBe('Warning');
  });

  it('gives no Event for conditions of unknown polarity (upstream types)', () => {
    const out = conditionTransitions([cond('Progressing', 'False')], [cond('Progressing', 'True')], polarity);
    expect(out).toHaveLength(1);
    expect(out[0]?.eventType).toBeUndefined();
  });
});

describe('statusChanged', () => {
  const base = { phase: 'Ready' as const, observedGeneration: 1, conditions: [cond('Ready', 'True'), cond('Available', 'True')] };

  it('is false for an identical status and for a mere reordering of conditions', () => {
    expect(statusChanged(base, structuredClone(base))).toBe(false);
    expect(statusChanged(base, { ...base, conditions: [...base.conditions].reverse() })).toBe(false);
  });

  it('is true when phase, observedGeneration or any condition field changes', () => {
    expect(statusChanged(base, { ...base, phase: 'Degraded' })).toBe(true);
    expect(statusChanged(base, { ...base, observedGeneration: 2 })).toBe(true);
    expect(statusChanged(base, { ...base, conditions: [cond('Ready', 'True', 'R', 'new'), cond('Available', 'True')] })).toBe(true);
    expect(statusChanged(base, { ...base, conditions: [cond('Ready', 'True')] })).toBe(true);
    expect(statusChanged(undefined, base)).toBe(true);
  });
});
