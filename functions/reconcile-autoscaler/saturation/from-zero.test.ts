import { describe, expect, it } from 'vitest';
import { selectActiveVariants } from './active-variants.js';
import { planScaleFromZero, type PendingRequests } from './from-zero.js';
import { candidate, deployment, va } from './test-helpers.js';

const stamp = { decidedAt: '2026-01-29T10:00:00Z', validUntil: '2026-01-29T10:03:00Z' };
const MODEL = 'meta/llama-3.1-8b|llm';

function atZero(...names: Array<[string, string]>) {
  return selectActiveVariants(names.map(([n, cost]) => candidate(va(n, { cost, accelerator: 'A100' }), deployment(n, 0, { specReplicas: 0 })))).atZero;
}

describe('planScaleFromZero (issue 14 scenario 5)', () => {
  it('requests waiting in the gateway: the cheapest variant of the model gets desired 1, the others stay at 0', () => {
    const plan = planScaleFromZero(atZero(['dear', '40'], ['cheap', '10']), new Set(), { [MODEL]: { status: 'ok', pending: 3 } }, stamp);
    expect(plan.decisions).toHaveLength(1);
    expect(plan.decisions[0]).toMatchObject({
      key: 'llm/cheap',
      variantName: 'cheap',
      targetUid: 'cheap-uid',
      desiredReplicas: 1,
      currentReplicas: 0,
      action: 'scale-up',
      source: 'scale-from-zero',
      decidedAt: stamp.decidedAt,
      validUntil: stamp.validUntil,
      metricsAvailable: { status: 'True', reason: 'MetricsFound' },
      optimizationReady: { status: 'True', reason: 'OptimizationSucceeded' },
    });
    expect(plan.decisions[0]?.optimizationReady.message).toContain('scale from zero');
    // No live numbers in conditions (they would rewrite status every cycle).
    expect(plan.decisions[0]?.optimizationReady.message).not.toContain('3');
    expect(plan.models).toEqual([{ key: MODEL, pending: { status: 'ok', pending: 3 }, woke: 'cheap' }]);
    expect(plan.watched).toBe(true);
  });

  it('equal costs: the first by name', () => {
    const plan = planScaleFromZero(atZero(['b', '10'], ['a', '10']), new Set(), { [MODEL]: { status: 'ok', pending: 1 } }, stamp);
    expect(plan.decisions.map((d) => d.variantName)).toEqual(['a']);
  });

  it('nothing waiting, no gateway series, or the query failed: nobody is woken; only a scraped gateway is worth a quick look again', () => {
    const cases: Array<[PendingRequests | undefined, boolean]> = [
      [{ status: 'ok', pending: 0 }, true],
      [{ status: 'none' }, false],
      [undefined, false],
      [{ status: 'error', message: 'connection refused' }, false],
    ];
    for (const [pending, watched] of cases) {
      const plan = planScaleFromZero(atZero(['a', '10']), new Set(), pending ? { [MODEL]: pending } : {}, stamp);
      expect(plan.decisions).toEqual([]);
      expect(plan.watched).toBe(watched);
    }
  });

  it('a model with a variant still serving is left to the saturation cycle', () => {
    const plan = planScaleFromZero(atZero(['a', '10']), new Set([MODEL]), { [MODEL]: { status: 'ok', pending: 5 } }, stamp);
    expect(plan).toEqual({ decisions: [], models: [], watched: false });
  });
});
