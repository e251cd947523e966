import { describe, expect, it } from 'vitest';
import { calculateSaturationTargets } from './targets.js';
import type { ModelAnalysis, VariantAnalysis, VariantState } from './types.js';

// WVA's target cases (reference §6): three variants costing 20/5/15, 2 pods reporting each,
// current 2, no previous decision.
const variant = (variantName: string, cost: number, replicaCount = 2): VariantAnalysis => ({
  variantName,
  cost,
  accelerator: 'A100',
  replicaCount,
  nonSaturatedCount: replicaCount,
  saturatedReplicas: [],
  maxKvCacheUsage: 0,
  maxQueueLength: 0,
  avgSpareKv: 0.3,
  avgSpareQueue: 3,
});

const analysis = (over: Partial<ModelAnalysis>, variants = [variant('v1-expensive', 20), variant('v2-cheap', 5), variant('v3-medium', 15)]): ModelAnalysis => ({
  totalReplicas: 6,
  nonSaturatedCount: 6,
  avgSpareKv: 0.3,
  avgSpareQueue: 3,
  shouldScaleUp: false,
  scaleDownSafe: false,
  variants,
  ...over,
});

const state = (variantName: string, cost: number, currentReplicas = 2, desiredReplicas = 0, pendingReplicas = 0): VariantState => ({ variantName, cost, currentReplicas, desiredReplicas, pendingReplicas });
const threeStates = () => [state('v1-expensive', 20), state('v2-cheap', 5), state('v3-medium', 15)];

describe('calculateSaturationTargets', () => {
  it('scale-up adds one replica to the cheapest variant only', () => {
    const r = calculateSaturationTargets(analysis({ shouldScaleUp: true, scaleUpReason: 'average spare KV cache 0.045 < 0.100' }), threeStates());
    expect(r.targets).toEqual({ 'v1-expensive': 2, 'v2-cheap': 3, 'v3-medium': 2 });
    expect(r.inTransition).toBe(false);
    expect(r.step).toMatchObject({ kind: 'scale-up', variantName: 'v2-cheap' });
  });

  it('scale-down removes one replica from the most expensive variant only', () => {
    const r = calculateSaturationTargets(analysis({ scaleDownSafe: true }), threeStates());
    expect(r.targets).toEqual({ 'v1-expensive': 1, 'v2-cheap': 2, 'v3-medium': 2 });
    expect(r.step).toMatchObject({ kind: 'scale-down', variantName: 'v1-expensive' });
  });

  it('scale-up wins over scale-down', () => {
    const r = calculateSaturationTargets(analysis({ shouldScaleUp: true, scaleDownSafe: true }), threeStates());
    expect(r.targets['v2-cheap']).toBe(3);
    expect(r.targets['v1-expensive']).toBe(2);
  });

  it('desired 4 ≠ current 2 on one variant: that variant stays 4, the others are held at 2', () => {
    const states = [state('v1-expensive', 20, 2, 4), state('v2-cheap', 5, 2, 0)];
    const r = calculateSaturationTargets(analysis({ shouldScaleUp: true }, [variant('v1-expensive', 20), variant('v2-cheap', 5)]), states);
    expect(r.inTransition).toBe(true);
    expect(r.targets).toEqual({ 'v1-expensive': 4, 'v2-cheap': 2 });
    expect(r.transitionReasons).toEqual(['v1-expensive: desired 4 ≠ current 2']);
  });

  it('current 3 vs 2 pods reporting: stays 3, the others are held', () => {
    const states = [state('v1-expensive', 20, 3, 0), state('v2-cheap', 5, 2, 0)];
    const r = calculateSaturationTargets(analysis({ scaleDownSafe: true }, [variant('v1-expensive', 20), variant('v2-cheap', 5)]), states);
    expect(r.inTransition).toBe(true);
    expect(r.targets).toEqual({ 'v1-expensive': 3, 'v2-cheap': 2 });
    expect(r.transitionReasons).toEqual(['v1-expensive: 2 pod(s) reporting metrics ≠ current 3']);
  });

  it('a variant whose pods report nothing holds the whole model (documented behaviour)', () => {
    const states = [state('v1-expensive', 20, 2), state('v2-cheap', 5, 2)];
    const r = calculateSaturationTargets(analysis({ shouldScaleUp: true }, [variant('v1-expensive', 20), variant('v2-cheap', 5, 0)]), states);
    expect(r.inTransition).toBe(true);
    expect(r.targets).toEqual({ 'v1-expensive': 2, 'v2-cheap': 2 });
  });

  it('a desired count equal to current is not a transition', () => {
    const r = calculateSaturationTargets(analysis({ shouldScaleUp: true }), [state('v1-expensive', 20, 2, 2), state('v2-cheap', 5, 2, 2), state('v3-medium', 15, 2, 2)]);
    expect(r.inTransition).toBe(false);
    expect(r.targets['v2-cheap']).toBe(3);
  });

  it('skips variants with pending pods for scale-up', () => {
    const states = [state('v1-expensive', 20), state('v2-cheap', 5, 2, 0, 1), state('v3-medium', 15)];
    const r = calculateSaturationTargets(analysis({ shouldScaleUp: true }), states);
    expect(r.targets).toEqual({ 'v1-expensive': 2, 'v2-cheap': 2, 'v3-medium': 3 });
  });

  it('does nothing when every variant has pending pods', () => {
    const states = [state('v1-expensive', 20, 2, 0, 1), state('v2-cheap', 5, 2, 0, 1), state('v3-medium', 15, 2, 0, 2)];
    const r = calculateSaturationTargets(analysis({ shouldScaleUp: true, scaleUpReason: 'x' }), states);
    expect(r.targets).toEqual({ 'v1-expensive': 2, 'v2-cheap': 2, 'v3-medium': 2 });
    expect(r.step.kind).toBe('none');
  });

  it('breaks cost ties by name: first for scale-up, last for scale-down', () => {
    const vs = [variant('b', 10), variant('a', 10), variant('c', 10)];
    const ss = [state('b', 10), state('a', 10), state('c', 10)];
    expect(calculateSaturationTargets(analysis({ shouldScaleUp: true }, vs), ss).targets).toEqual({ a: 3, b: 2, c: 2 });
    expect(calculateSaturationTargets(analysis({ scaleDownSafe: true }, vs), ss).targets).toEqual({ a: 2, b: 2, c: 1 });
  });

  it('never scales a variant below one replica', () => {
    const vs = [variant('exp', 50, 1), variant('cheap', 30, 2)];
    const ss = [state('exp', 50, 1), state('cheap', 30, 2)];
    const r = calculateSaturationTargets(analysis({ scaleDownSafe: true }, vs), ss);
    expect(r.targets).toEqual({ exp: 1, cheap: 1 });
    const allOne = calculateSaturationTargets(analysis({ scaleDownSafe: true }, [variant('x', 1, 1)]), [state('x', 1, 1)]);
    expect(allOne.targets).toEqual({ x: 1 });
    expect(allOne.step).toEqual({ kind: 'none', reason: 'scale-down would be safe but every variant is at one replica' });
  });
});
