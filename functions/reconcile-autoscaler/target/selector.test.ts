import { describe, expect, it } from 'vitest';
import { mapPodsToVariants, selectorMatches } from './selector.js';

describe('selectorMatches', () => {
  it('follows label selector semantics', () => {
    const sel = { matchLabels: { app: 'llama' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['decode'] }, { key: 'canary', operator: 'DoesNotExist' }] };
    expect(selectorMatches(sel, { app: 'llama', tier: 'decode' })).toBe(true);
    expect(selectorMatches(sel, { app: 'llama', tier: 'prefill' })).toBe(false);
    expect(selectorMatches(sel, { app: 'llama', tier: 'decode', canary: '' })).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['1'] }] }, {})).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }, { x: '' })).toBe(true);
    expect(selectorMatches({}, { app: 'llama' })).toBe(false);
    expect(selectorMatches(undefined, { app: 'llama' })).toBe(false);
  });
});

describe('mapPodsToVariants', () => {
  it('maps each pod to the one Deployment selecting it, skipping ambiguous pods', () => {
    const m = mapPodsToVariants(
      [
        { name: 'a-1', labels: { app: 'a' } },
        { name: 'b-1', labels: { app: 'b', shared: 'y' } },
        { name: 'x-1', labels: { app: 'x' } },
      ],
      [
        { variantName: 'a', selector: { matchLabels: { app: 'a' } } },
        { variantName: 'b', selector: { matchLabels: { app: 'b' } } },
        { variantName: 'greedy', selector: { matchLabels: { shared: 'y' } } },
      ],
    );
    expect([...m]).toEqual([['a-1', 'a']]);
  });
});
