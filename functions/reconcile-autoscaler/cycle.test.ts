import { describe, expect, it } from 'vitest';
import { changedKeys, decisionTtlMs } from './cycle.js';
import type { VariantDecision } from './saturation/decision.js';

const decision = (key: string, desiredReplicas: number, over: Partial<VariantDecision> = {}): VariantDecision => ({
  key,
  vaName: key.split('/')[1] ?? key,
  namespace: 'llm',
  modelID: 'm',
  variantName: key.split('/')[1] ?? key,
  targetUid: 'u',
  accelerator: 'A100',
  cost: 10,
  currentReplicas: 1,
  desiredReplicas,
  action: 'no-change',
  source: 'saturation',
  reason: 'no change: spare capacity within bounds (spare KV cache 0.312)',
  limited: false,
  decidedAt: '2026-01-29T10:00:00Z',
  metricsAvailable: { type: 'MetricsAvailable', status: 'True', reason: 'MetricsFound', message: 'Saturation metrics from 1 pod(s)' },
  optimizationReady: { type: 'OptimizationReady', status: 'True', reason: 'OptimizationSucceeded', message: 'no change: spare capacity within bounds (desired 1 replica(s))' },
  ...over,
});

describe('changedKeys (the VAs a quick re-check visits)', () => {
  it('only VAs whose decision changed, new ones, and ones newly left out; not those with the same decision at a later time', () => {
    const previous = new Map([
      ['llm/same', decision('llm/same', 1)],
      ['llm/up', decision('llm/up', 1)],
      ['llm/zeroed', decision('llm/zeroed', 2)],
    ]);
    const now = [
      decision('llm/same', 1, { decidedAt: '2026-01-29T10:05:00Z', reason: 'no change: spare capacity within bounds (spare KV cache 0.298)' }),
      decision('llm/up', 2),
      decision('llm/new', 1),
    ];
    expect(changedKeys(now, [{ key: 'llm/zeroed' }, { key: 'llm/never-decided' }], previous)).toEqual(['llm/up', 'llm/new', 'llm/zeroed']);
  });
});

describe('decisionTtlMs (how long a decision stays published unconfirmed)', () => {
  it('is three intervals at the usual intervals', () => {
    expect(decisionTtlMs(60_000)).toBe(180_000);
    expect(decisionTtlMs(30_000)).toBe(90_000);
  });
  it('is never shorter than 30 s, so a short interval does not blank a series between two healthy but slow cycles', () => {
    expect(decisionTtlMs(2_000)).toBe(30_000);
    expect(decisionTtlMs(10_000)).toBe(30_000);
  });
});
