import { describe, expect, it } from 'vitest';
import { enforcePolicy } from './enforcer.js';

// WVA's enforcer cases (reference §6).
describe('enforcePolicy', () => {
  const costs = { 'variant-a': 1, 'variant-b': 2 };

  it('scale-to-zero on and 0 requests: every target 0', () => {
    const r = enforcePolicy({ 'variant-a': 2, 'variant-b': 1 }, costs, { enabled: true }, { status: 'ok', count: 0 });
    expect(r.targets).toEqual({ 'variant-a': 0, 'variant-b': 0 });
    expect(r.applied).toBe('scale-to-zero');
  });

  it('scale-to-zero on with requests: unchanged', () => {
    const r = enforcePolicy({ 'variant-a': 2, 'variant-b': 1 }, costs, { enabled: true }, { status: 'ok', count: 12.5 });
    expect(r.targets).toEqual({ 'variant-a': 2, 'variant-b': 1 });
    expect(r.applied).toBeUndefined();
  });

  it('scale-to-zero on and the query failed (or was not run): unchanged', () => {
    const failed = enforcePolicy({ 'variant-a': 2, 'variant-b': 1 }, costs, { enabled: true }, { status: 'error', message: 'timeout' });
    expect(failed.targets).toEqual({ 'variant-a': 2, 'variant-b': 1 });
    expect(failed.applied).toBeUndefined();
    expect(failed.reason).toBe('request count unknown (timeout); targets kept');
    expect(enforcePolicy({ a: 1 }, {}, { enabled: true }, undefined).targets).toEqual({ a: 1 });
  });

  it('scale-to-zero off and total 0: the cheapest variant keeps 1', () => {
    const r = enforcePolicy({ 'variant-a': 0, 'variant-b': 0 }, { 'variant-a': 2, 'variant-b': 1 }, { enabled: false }, undefined);
    expect(r.targets).toEqual({ 'variant-a': 0, 'variant-b': 1 });
    expect(r.applied).toBe('minimum-replica');
  });

  it('scale-to-zero off with replicas left: unchanged', () => {
    const r = enforcePolicy({ 'variant-a': 2, 'variant-b': 0 }, { 'variant-a': 2, 'variant-b': 1 }, { enabled: false }, undefined);
    expect(r.targets).toEqual({ 'variant-a': 2, 'variant-b': 0 });
    expect(r.applied).toBeUndefined();
  });

  it('equal cost: alphabetical; missing cost counts as 10', () => {
    expect(enforcePolicy({ 'variant-z': 0, 'variant-a': 0 }, { 'variant-z': 1, 'variant-a': 1 }, { enabled: false }, undefined).targets).toEqual({ 'variant-z': 0, 'variant-a': 1 });
    expect(enforcePolicy({ 'variant-a': 0, 'variant-b': 0 }, { 'variant-a': 100 }, { enabled: false }, undefined).targets).toEqual({ 'variant-a': 0, 'variant-b': 1 });
    expect(enforcePolicy({ 'variant-a': 0, 'variant-b': 0 }, { 'variant-a': 5 }, { enabled: false }, undefined).targets).toEqual({ 'variant-a': 1, 'variant-b': 0 });
  });

  it('does not change its input', () => {
    const targets = { a: 0 };
    enforcePolicy(targets, {}, { enabled: false }, undefined);
    expect(targets).toEqual({ a: 0 });
  });

  it('scale-to-zero on, 0 requests served, but requests waiting in the gateway: unchanged (a model just woken from zero)', () => {
    const r = enforcePolicy({ 'variant-a': 1, 'variant-b': 0 }, costs, { enabled: true }, { status: 'ok', count: 0 }, 2);
    expect(r.targets).toEqual({ 'variant-a': 1, 'variant-b': 0 });
    expect(r.applied).toBeUndefined();
    expect(enforcePolicy({ 'variant-a': 1 }, costs, { enabled: true }, { status: 'ok', count: 0 }, 0).applied).toBe('scale-to-zero');
  });
});
