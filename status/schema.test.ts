import { describe, expect, it } from 'vitest';
import { ConditionSchema, EngineStatusSchema, PHASES } from './schema.js';

const good = {
  type: 'Ready',
  status: 'True',
  observedGeneration: 2,
  lastTransitionTime: '2026-03-01T12:00:00Z',
  reason: 'AllComponentsReady',
  message: '',
};

describe('ConditionSchema', () => {
  it('accepts a metav1.Condition as the API server returns it', () => {
    expect(ConditionSchema.parse(good)).toEqual(good);
    expect(ConditionSchema.safeParse({ ...good, type: 'example.com/Ready', lastTransitionTime: '2026-03-01T14:00:00+02:00' }).success).toBe(true);
    const { observedGeneration: _omit, ...withoutGeneration } = good;
    expect(ConditionSchema.safeParse(withoutGeneration).success).toBe(true);
  });

  it('rejects what metav1 rejects', () => {
    for (const bad of [
      { ...good, status: 'true' },
      { ...good, reason: '' },
      { ...good, reason: 'Not CamelCase' },
      { ...good, type: 'bad type' },
      { ...good, lastTransitionTime: 'yesterday' },
      { ...good, observedGeneration: -1 },
      { ...good, message: undefined },
    ]) {
      expect(ConditionSchema.safeParse(bad).success).toBe(false);
    }
  });
});

describe('EngineStatusSchema', () => {
  it('accepts an empty status (a fresh object) and every phase', () => {
    expect(EngineStatusSchema.safeParse({}).success).toBe(true);
    for (const phase of PHASES) expect(EngineStatusSchema.safeParse({ phase }).success).toBe(true);
    expect(EngineStatusSchema.safeParse({ phase: 'Running' }).success).toBe(false);
  });

  it('rejects two conditions of one type (conditions are a map keyed by type)', () => {
    expect(EngineStatusSchema.safeParse({ conditions: [good, { ...good, status: 'False' }] }).success).toBe(false);
  });
});
