import { describe, expect, it } from 'vitest';
import { inactiveStillApplies, selectActiveVariants, UNRESOLVED_ACCELERATOR } from './active-variants.js';
import { candidate, deployment, va } from './test-helpers.js';

describe('selectActiveVariants', () => {
  it('groups variants of one model in one namespace, named by their Deployment', () => {
    const { groups, inactive } = selectActiveVariants([
      candidate(va('cheap-va', { cost: '30', accelerator: 'L40S', target: 'cheap' }), deployment('cheap', 2)),
      candidate(va('dear-va', { cost: '50', accelerator: 'H100', target: 'dear' }), deployment('dear', 1)),
      candidate(va('other', { modelID: 'ibm/granite-13b', accelerator: 'A100' }), deployment('other', 1)),
      candidate(va('elsewhere', { namespace: 'b', accelerator: 'A100' }), deployment('elsewhere', 1, { namespace: 'b' })),
    ]);
    expect(inactive).toEqual([]);
    expect(groups.map((g) => [g.key, g.variants.map((v) => v.variantName)])).toEqual([
      ['ibm/granite-13b|llm', ['other']],
      ['meta/llama-3.1-8b|b', ['elsewhere']],
      ['meta/llama-3.1-8b|llm', ['cheap', 'dear']],
    ]);
    expect(groups[2]?.variants[0]).toEqual({
      key: 'llm/cheap-va',
      vaName: 'cheap-va',
      namespace: 'llm',
      modelID: 'meta/llama-3.1-8b',
      variantName: 'cheap',
      targetUid: 'cheap-uid',
      cost: 30,
      accelerator: 'L40S',
      acceleratorSource: 'label',
      currentReplicas: 2,
      readyReplicas: 2,
      pendingReplicas: 0,
      gpusPerReplica: 1,
    });
  });

  it('leaves out VAs that cannot take part, saying why', () => {
    const deletingVa = va('gone');
    deletingVa.metadata.deletionTimestamp = '2026-01-29T10:00:00Z';
    const sts = va('sts');
    sts.spec.scaleTargetRef = { kind: 'ReplicaSet', name: 'sts' };
    const { groups, inactive } = selectActiveVariants(
      [
        candidate(deletingVa, deployment('gone', 1)),
        candidate(va('mine', { labels: { 'wva.llmd.ai/controller-instance': 'a' } }), deployment('mine', 1)),
        candidate(va('theirs', { labels: { 'wva.llmd.ai/controller-instance': 'b' } }), deployment('theirs', 1)),
        candidate(sts, undefined),
        candidate(va('missing'), undefined),
        candidate(va('dying'), deployment('dying', 1, { deleting: true })),
        candidate(va('zero'), deployment('zero', 0, { specReplicas: 0 })),
        candidate(va('a-first', { target: 'shared' }), deployment('shared', 1)),
        candidate(va('b-second', { target: 'shared' }), deployment('shared', 1)),
      ],
      { controllerInstance: 'a' },
    );
    expect(groups.flatMap((g) => g.variants.map((v) => v.key))).toEqual(['llm/mine']);
    expect(inactive.map((i) => [i.key, i.reason])).toEqual([
      ['llm/a-first', 'other-controller-instance'],
      ['llm/b-second', 'other-controller-instance'],
      ['llm/dying', 'other-controller-instance'],
      ['llm/gone', 'deleting'],
      ['llm/missing', 'other-controller-instance'],
      ['llm/sts', 'other-controller-instance'],
      ['llm/theirs', 'other-controller-instance'],
      ['llm/zero', 'other-controller-instance'],
    ]);
    const all = selectActiveVariants([
      candidate(sts, undefined),
      candidate(va('missing'), undefined),
      candidate(va('dying'), deployment('dying', 1, { deleting: true })),
      candidate(va('zero'), deployment('zero', 0, { specReplicas: 0 })),
      candidate(va('a-first', { target: 'shared' }), deployment('shared', 1)),
      candidate(va('b-second', { target: 'shared' }), deployment('shared', 1)),
    ]);
    expect(all.inactive).toEqual([
      { key: 'llm/b-second', reason: 'duplicate-target', message: 'Deployment shared is already scaled by VariantAutoscaling a-first' },
      { key: 'llm/dying', reason: 'target-deleting', message: 'Deployment dying is being deleted' },
      { key: 'llm/missing', reason: 'target-not-found', message: 'Deployment missing not found' },
      { key: 'llm/sts', reason: 'unsupported-target', message: 'scaleTargetRef ReplicaSet is not a kind the autoscaler scales' },
      {
        key: 'llm/zero',
        reason: 'target-scaled-to-zero',
        message: 'Deployment zero has 0 replicas',
        zeroSeries: { variantName: 'zero', namespace: 'llm', accelerator: UNRESOLVED_ACCELERATOR, current: 0 },
      },
    ]);
    // The one at zero is a candidate for scale from zero (issue 14 scenario 5); the others are not.
    expect(all.atZero.map((g) => [g.key, g.variants.map((v) => v.key)])).toEqual([['meta/llama-3.1-8b|llm', ['llm/zero']]]);
  });

  it('lists variants at zero by model, one VA per Deployment', () => {
    const { groups, atZero } = selectActiveVariants([
      candidate(va('z-b', { cost: '40' }), deployment('z-b', 0, { specReplicas: 0 })),
      candidate(va('z-a', { cost: '10' }), deployment('z-a', 0, { specReplicas: 0 })),
      candidate(va('z-a-twin', { target: 'z-a' }), deployment('z-a', 0, { specReplicas: 0 })),
    ]);
    expect(groups).toEqual([]);
    expect(atZero).toHaveLength(1);
    expect(atZero[0]?.variants.map((v) => [v.vaName, v.variantName, v.cost])).toEqual([
      ['z-a', 'z-a', 10],
      ['z-b', 'z-b', 40],
    ]);
  });

  it('finds the accelerator from the label, the GPU product node selector, the last status, else "unresolved"', () => {
    const pick = (v: ReturnType<typeof va>, product?: string) =>
      selectActiveVariants([candidate(v, { ...deployment(v.spec.scaleTargetRef.name, 1), ...(product ? { gpuProduct: product } : {}) })]).groups[0]?.variants[0];
    expect(pick(va('x', { accelerator: 'H100' }), 'NVIDIA-A100-SXM4-80GB')).toMatchObject({ accelerator: 'H100', acceleratorSource: 'label' });
    expect(pick(va('x'), 'NVIDIA-A100-SXM4-80GB')).toMatchObject({ accelerator: 'A100', acceleratorSource: 'node-selector' });
    const withStatus = va('x', { desired: 2, accelerator: 'L4' });
    delete withStatus.metadata.labels?.['inference.optimization/acceleratorName'];
    expect(pick(withStatus)).toMatchObject({ accelerator: 'L4', acceleratorSource: 'status', desiredReplicas: 2 });
    expect(pick(va('x'))).toMatchObject({ accelerator: UNRESOLVED_ACCELERATOR, acceleratorSource: 'unresolved' });
  });

  it('reads the cost from variantCost, 10 by default', () => {
    const { groups } = selectActiveVariants([candidate(va('a', { cost: '42.5' }), deployment('a', 1)), candidate(va('b'), deployment('b', 1))]);
    expect(groups[0]?.variants.map((v) => v.cost)).toEqual([42.5, 10]);
  });

  it('issue 14 scenario 2: a decision made for a deleted Deployment is no previous decision of the one recreated under its name', () => {
    const recreated = { ...deployment('rc', 1), uid: 'new-uid' };
    const v = va('rc', { desired: 5, accelerator: 'A100' });
    const pick = (previous: { desiredReplicas: number; targetUid?: string }) => selectActiveVariants([candidate(v, recreated, previous)]).groups[0]?.variants[0];
    // The status still says 5 (it outlives the Deployment); the stored decision was for the old uid.
    expect(pick({ desiredReplicas: 5, targetUid: 'old-uid' })).not.toHaveProperty('desiredReplicas');
    expect(pick({ desiredReplicas: 5, targetUid: 'new-uid' })).toMatchObject({ desiredReplicas: 5, targetUid: 'new-uid' });
    // Without a stored decision, the status's desiredOptimizedAlloc is not read as one.
    expect(selectActiveVariants([{ va: v, deployment: recreated }]).groups[0]?.variants[0]).not.toHaveProperty('desiredReplicas');
  });

  it('issue 14 scenario 1: a reason to leave a VA out that no longer holds for the Deployment as read now is dropped', () => {
    expect(inactiveStillApplies('target-not-found', deployment('a', 1))).toBe(false);
    expect(inactiveStillApplies('target-scaled-to-zero', deployment('a', 1))).toBe(false);
    expect(inactiveStillApplies('target-scaled-to-zero', deployment('a', 0, { specReplicas: 0 }))).toBe(true);
    expect(inactiveStillApplies('target-deleting', deployment('a', 1))).toBe(false);
    expect(inactiveStillApplies('duplicate-target', deployment('a', 1))).toBe(true);
  });
});
