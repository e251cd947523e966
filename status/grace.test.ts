import { describe, expect, it } from 'vitest';
import { connectivityTroubleSince, evaluateGrace } from './grace.js';
import type { Condition } from './schema.js';

const dependencies = (status: Condition['status']): Condition[] => [
  { type: 'DependenciesReachable', status, reason: 'X', message: '', lastTransitionTime: '2026-03-01T12:00:00Z' },
];

describe('connectivityTroubleSince', () => {
  it('is the transition time of DependenciesReachable=False, and nothing otherwise', () => {
    expect(connectivityTroubleSince(dependencies('False'))).toBe(Date.parse('2026-03-01T12:00:00Z'));
    expect(connectivityTroubleSince(dependencies('True'))).toBeUndefined();
    expect(connectivityTroubleSince(undefined)).toBeUndefined();
  });
});

describe('evaluateGrace', () => {
  const base = { gracePeriodMs: 10_000, nowMs: 50_000 };

  it('is informational unless the resource was Starting, Ready or Degraded', () => {
    for (const previousPhase of [undefined, 'Pending', 'Failed', 'NotAvailable'] as const) {
      expect(evaluateGrace({ ...base, previousPhase, sinceMs: 0 }).state).toBe('informational');
    }
  });

  it('counts from the first sighting; the period ends at exactly 10 s', () => {
    expect(evaluateGrace({ ...base, previousPhase: 'Ready', sinceMs: undefined })).toEqual({ state: 'within', sinceMs: 50_000, remainingMs: 10_000 });
    expect(evaluateGrace({ ...base, previousPhase: 'Starting', sinceMs: 40_001 })).toEqual({ state: 'within', sinceMs: 40_001, remainingMs: 1 });
    expect(evaluateGrace({ ...base, previousPhase: 'Starting', sinceMs: 40_000 }).state).toBe('expired');
  });

  it('treats a first sighting in the future (clock skew between replicas) as now', () => {
    expect(evaluateGrace({ ...base, previousPhase: 'Ready', sinceMs: 70_000 })).toEqual({ state: 'within', sinceMs: 50_000, remainingMs: 10_000 });
  });
});
