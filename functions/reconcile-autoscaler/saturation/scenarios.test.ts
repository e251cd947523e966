/**
 * Multi-cycle scenarios through the whole pure path (selection → analysis → targets → policy),
 * with an idealised HPA that applies each decision before the next cycle.
 */
import { describe, expect, it } from 'vitest';
import { parseSaturationConfig } from '../config/saturation-config.js';
import { selectActiveVariants } from './active-variants.js';
import { decideCycle } from './engine.js';
import { candidate, deployment, va } from './test-helpers.js';
import type { ReplicaMetrics } from './types.js';

interface Variant {
  name: string;
  cost: string;
  replicas: number;
  desired?: number;
}

/** Load spread evenly over every pod of the model: total KV "work" and total waiting requests. */
interface Load {
  kv: number;
  queue: number;
}

function cycle(variants: Variant[], load: Load, t: number, opts: { hpaLag?: boolean } = {}) {
  const { groups } = selectActiveVariants(
    variants.map((v) =>
      candidate(va(v.name, { cost: v.cost, accelerator: 'A100', ...(v.desired !== undefined ? { desired: v.desired } : {}) }), deployment(v.name, v.replicas)),
    ),
  );
  const total = variants.reduce((a, v) => a + v.replicas, 0);
  const replicas: ReplicaMetrics[] = variants.flatMap((v) =>
    Array.from({ length: v.replicas }, (_, i) => ({ podName: `${v.name}-${i}`, variantName: v.name, kvCacheUsage: Math.min(1, load.kv / total), queueLength: load.queue / total })),
  );
  const r = decideCycle(groups, { 'meta/llama-3.1-8b|llm': { metrics: { status: 'ok', replicas } } }, {
    now: new Date(Date.UTC(2026, 0, 29, 12, 0, t)),
    saturation: parseSaturationConfig(undefined).config,
    scaleToZero: () => ({ enabled: false, retentionMs: 600_000 }),
  });
  for (const d of r.decisions) {
    const v = variants.find((x) => x.name === d.variantName)!;
    v.desired = d.desiredReplicas;
    if (!opts.hpaLag) v.replicas = d.desiredReplicas;
  }
  return r;
}

describe('scenarios', () => {
  it('two variants costing 30 and 50: the cheaper one’s desired ≥ the other’s, through load going up and down', () => {
    const variants: Variant[] = [
      { name: 'cheap', cost: '30', replicas: 1 },
      { name: 'dear', cost: '50', replicas: 1 },
    ];
    const loads = [0.4, 0.9, 1.4, 1.8, 2.4, 2.4, 1.2, 0.6, 0.3, 0.2, 0.2, 0.2];
    const cheapPath: number[] = [];
    loads.forEach((kv, t) => {
      const r = cycle(variants, { kv, queue: 0 }, t);
      const [cheap, dear] = r.decisions;
      expect(cheap!.desiredReplicas).toBeGreaterThanOrEqual(dear!.desiredReplicas);
      expect(dear!.desiredReplicas).toBe(1);
      cheapPath.push(cheap!.desiredReplicas);
    });
    // all the growth went to the cheaper variant, and it shrank back first too (the dearer one stayed at 1)
    expect(cheapPath).toEqual([1, 1, 1, 2, 3, 3, 2, 1, 1, 1, 1, 1]);
    expect(variants.map((v) => v.replicas)).toEqual([1, 1]);
  });

  it('rising KV-cache use scales the cheaper variant up by one, then holds while the new replica comes up', () => {
    const variants: Variant[] = [
      { name: 'cheap', cost: '30', replicas: 1 },
      { name: 'dear', cost: '50', replicas: 1 },
    ];
    // per-pod KV use 0.30 → 0.50 → 0.68: spare 0.12 is still above the 0.10 trigger
    for (const [t, kv] of [0.6, 1.0, 1.36].entries()) {
      const r = cycle(variants, { kv, queue: 0 }, t, { hpaLag: true });
      expect(r.decisions.map((d) => d.desiredReplicas)).toEqual([1, 1]);
    }
    // per-pod 0.72: spare 0.08 < 0.10 → +1 on the cheaper variant only
    const up = cycle(variants, { kv: 1.44, queue: 0 }, 3, { hpaLag: true });
    expect(up.decisions.map((d) => [d.variantName, d.currentReplicas, d.desiredReplicas, d.action])).toEqual([
      ['cheap', 1, 2, 'scale-up'],
      ['dear', 1, 1, 'no-change'],
    ]);
    // the Deployment has not grown yet: the model is in transition and nothing more is added
    const held = cycle(variants, { kv: 1.6, queue: 0 }, 4, { hpaLag: true });
    expect(held.models[0]?.inTransition).toBe(true);
    expect(held.decisions.map((d) => d.desiredReplicas)).toEqual([2, 1]);
  });

  it('idle load scales down safely, one replica per cycle, most expensive first, never below one each', () => {
    const variants: Variant[] = [
      { name: 'cheap', cost: '30', replicas: 3 },
      { name: 'dear', cost: '50', replicas: 3 },
    ];
    const seen: number[][] = [];
    for (let t = 0; t < 8; t++) {
      const r = cycle(variants, { kv: 0.1, queue: 0 }, t);
      seen.push(r.decisions.map((d) => d.desiredReplicas));
      expect(r.decisions.filter((d) => d.action === 'scale-down').length).toBeLessThanOrEqual(1);
    }
    expect(seen).toEqual([
      [3, 2],
      [3, 1],
      [2, 1],
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
  });

  it('does not scale down when the load would not fit on one replica fewer', () => {
    const variants: Variant[] = [
      { name: 'cheap', cost: '30', replicas: 2 },
      { name: 'dear', cost: '50', replicas: 1 },
    ];
    // per-pod 0.40: removing one of three leaves 0.60 each → spare 0.20 ≥ 0.10 → safe
    expect(cycle(variants, { kv: 1.2, queue: 0 }, 0).decisions.map((d) => d.desiredReplicas)).toEqual([1, 1]);
    // per-pod 0.40 on two pods: removing one leaves 0.80 → spare 0 < 0.10 → unsafe
    expect(cycle(variants, { kv: 0.8, queue: 0 }, 1).decisions.map((d) => d.desiredReplicas)).toEqual([1, 1]);
    expect(variants.map((v) => v.replicas)).toEqual([1, 1]);
  });
});
