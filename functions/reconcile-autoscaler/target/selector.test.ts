import type { V1LabelSelector } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { labelSelectorQuery, mapPodsToVariants, parseSelectorString, selectorMatches } from './selector.js';

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

describe('issue 14 scenario 9: overlapping selectors and pods listed by selector', () => {
  it('gives a pod two selectors match to the Deployment whose ReplicaSet controls it', () => {
    const variants: Array<{ variantName: string; selector: V1LabelSelector }> = [
      { variantName: 'llama-a100', selector: { matchLabels: { app: 'llama' } } },
      { variantName: 'llama-h100', selector: { matchLabels: { app: 'llama', gpu: 'h100' } } },
    ];
    const m = mapPodsToVariants(
      [
        { name: 'a-1', labels: { app: 'llama', 'pod-template-hash': '5f7' }, replicaSet: 'llama-a100-5f7' },
        { name: 'h-1', labels: { app: 'llama', gpu: 'h100', 'pod-template-hash': '9c2' }, replicaSet: 'llama-h100-9c2' },
        // No controller to settle it: still left out rather than counted twice.
        { name: 'orphan', labels: { app: 'llama', gpu: 'h100' } },
      ],
      variants,
    );
    expect([...m]).toEqual([
      ['a-1', 'llama-a100'],
      ['h-1', 'llama-h100'],
    ]);
  });

  it('writes a selector as the labelSelector query parameter', () => {
    expect(labelSelectorQuery({ matchLabels: { app: 'llama', tier: 'decode' } })).toBe('app=llama,tier=decode');
    expect(
      labelSelectorQuery({
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['decode', 'prefill'] },
          { key: 'canary', operator: 'NotIn', values: ['yes'] },
          { key: 'gpu', operator: 'Exists' },
          { key: 'debug', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('tier in (decode,prefill),canary notin (yes),gpu,!debug');
    expect(labelSelectorQuery({})).toBeUndefined();
    expect(labelSelectorQuery(undefined)).toBeUndefined();
    expect(labelSelectorQuery({ matchExpressions: [{ key: 'x', operator: 'Gt', values: ['1'] }] })).toBeUndefined();
  });
});

describe('parseSelectorString (a scale subresource status.selector)', () => {
  it('reads equality, set and existence terms back into a label selector', () => {
    expect(parseSelectorString('app=llama,tier in (a, b),!canary,zone,env!=dev')).toEqual({
      matchLabels: { app: 'llama' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['a', 'b'] },
        { key: 'canary', operator: 'DoesNotExist' },
        { key: 'zone', operator: 'Exists' },
        { key: 'env', operator: 'NotIn', values: ['dev'] },
      ],
    });
  });

  it('is undefined when empty or not understood: no pod is taken for the target rather than the wrong ones', () => {
    expect(parseSelectorString(undefined)).toBeUndefined();
    expect(parseSelectorString('')).toBeUndefined();
    expect(parseSelectorString('app=(x')).toBeUndefined();
  });
});
