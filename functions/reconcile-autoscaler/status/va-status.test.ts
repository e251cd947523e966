import { describe, expect, it } from 'vitest';
import { parseVariantAutoscaling, variantAutoscalingStatusSchema, type VariantAutoscalingStatus } from '../../../api/variantautoscaling.js';
import { Resources } from '../../../kube/resources.js';
import { deployment } from '../saturation/test-helpers.js';
import { computeStatus, type EngineStatus } from '../../../status/index.js';
import { StatusFixture } from '../../../status/test-fixtures.js';
import { FUNCTION_NAME } from '../keys.js';
import { resolveTarget, targetSpecProblems } from '../target/resolve.js';
import { variantStatusWrite } from './va-status.js';

const spec = { scaleTargetRef: { kind: 'Deployment', name: 'llama-8b' }, modelID: 'meta/llama-3.1-8b' };
const t0 = new Date('2026-01-29T10:00:00Z');
const t1 = new Date('2026-01-29T10:01:00Z');

const decision = {
  desiredReplicas: 3,
  accelerator: 'A100',
  currentReplicas: 3,
  decidedAt: '2026-01-29T10:00:00Z',
  metricsAvailable: { type: 'MetricsAvailable', status: 'True' as const, reason: 'MetricsFound', message: 'Saturation metrics from 3 pod(s)' },
  optimizationReady: { type: 'OptimizationReady', status: 'True' as const, reason: 'OptimizationSucceeded', message: 'no change (desired 3 replica(s))' },
};

function valid(status: unknown): VariantAutoscalingStatus {
  const r = parseVariantAutoscaling({ metadata: { name: 'v' }, spec, status });
  expect(r.ok, r.ok ? '' : r.errors.join('\n')).toBe(true);
  return variantAutoscalingStatusSchema.parse(status);
}

/**
 * A VA whose status is written exactly as reconcile-variant.ts writes it: `variantStatusWrite`
 * through `writeStatus`, applied to the stored object as the API server applies the merge patch.
 */
class VaFixture extends StatusFixture {
  constructor() {
    super({ resource: Resources.variantAutoscaling, source: FUNCTION_NAME, nowMs: t0.getTime(), object: { metadata: { name: 'v', namespace: 'llm', uid: 'u1', generation: 1, resourceVersion: '1' } } });
  }

  async write(i: Omit<Parameters<typeof variantStatusWrite>[0], 'previous' | 'specErrors'>, at: Date) {
    this.nowMs = at.getTime();
    const previous = variantAutoscalingStatusSchema.safeParse(this.object.status).data;
    const { input, fields } = variantStatusWrite({ previous, specErrors: [], ...i });
    return this.reconcile(input, fields);
  }
}

const conditions = (status: VariantAutoscalingStatus) => status.conditions?.filter((c) => ['TargetResolved', 'MetricsAvailable', 'OptimizationReady'].includes(c.type));

describe('the status reconcile-variant writes', () => {
  it('writes the whole desiredOptimizedAlloc and persists all three conditions', async () => {
    const f = new VaFixture();
    await f.write({ target: resolveTarget({ spec: { ...spec, variantCost: '10.0' } }, deployment('llama-8b', 3)), decision, actuationApplied: true }, t0);
    const s = valid(f.object.status);
    expect(s.desiredOptimizedAlloc).toEqual({ accelerator: 'A100', numReplicas: 3, lastRunTime: '2026-01-29T10:00:00Z' });
    expect(s.currentAllocation).toEqual({ numReplicas: 3, accelerator: 'A100' });
    expect(s.actuation).toEqual({ applied: true });
    expect(conditions(s)?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['TargetResolved', 'True', 'TargetFound'],
      ['MetricsAvailable', 'True', 'MetricsFound'],
      ['OptimizationReady', 'True', 'OptimizationSucceeded'],
    ]);
  });

  it('writes numReplicas 0 (never dropped)', async () => {
    const f = new VaFixture();
    await f.write({ target: resolveTarget({ spec: { ...spec, variantCost: '1' } }, deployment('llama-8b', 1)), decision: { ...decision, desiredReplicas: 0 } }, t0);
    expect(valid(f.object.status).desiredOptimizedAlloc).toEqual({ accelerator: 'A100', numReplicas: 0, lastRunTime: '2026-01-29T10:00:00Z' });
  });

  it('after the Deployment is deleted: seed 003 example 3, with currentAllocation written whole', async () => {
    const f = new VaFixture();
    const va = { spec: { ...spec, variantCost: '1' } };
    await f.write({ target: resolveTarget(va, deployment('llama-8b', 3)), decision, actuationApplied: true }, t0);
    await f.write({ target: resolveTarget(va, undefined) }, t1);
    const after = valid(f.object.status);
    expect(conditions(after)?.map((c) => [c.type, c.status, c.reason, c.message, c.lastTransitionTime])).toEqual([
      ['TargetResolved', 'False', 'TargetNotFound', 'Scale target Deployment llama-8b not found', '2026-01-29T10:01:00Z'],
      ['MetricsAvailable', 'False', 'MetricsMissing', 'No metrics: scale target Deployment llama-8b is gone', '2026-01-29T10:01:00Z'],
      ['OptimizationReady', 'False', 'MetricsUnavailable', 'Not optimized until scale target Deployment llama-8b exists', '2026-01-29T10:01:00Z'],
    ]);
    // The accelerator of the old allocation is gone, not merged into the new one.
    expect(after.currentAllocation).toEqual({ numReplicas: 0 });
    expect(after.actuation).toEqual({ applied: false });
    // Written once: the same observation again changes nothing.
    expect((await f.write({ target: resolveTarget(va, undefined) }, new Date(t1.getTime() + 30_000))).written).toBe(false);
    // recreated → resolved again
    await f.write({ target: resolveTarget(va, deployment('llama-8b', 1)) }, new Date(t1.getTime() + 60_000));
    expect(conditions(valid(f.object.status))?.[0]).toMatchObject({ status: 'True', reason: 'TargetFound', message: 'Scale target Deployment llama-8b found' });
  });

  it('is stable: the same inputs write nothing the second time; a new decision writes again', async () => {
    const f = new VaFixture();
    const target = resolveTarget({ spec: { ...spec, variantCost: '1' } }, deployment('llama-8b', 3));
    expect((await f.write({ target, decision }, t0)).written).toBe(true);
    expect((await f.write({ target, decision }, t1)).written).toBe(false);
    expect((await f.write({ target, decision: { ...decision, desiredReplicas: 4, decidedAt: '2026-01-29T10:01:00Z' } }, t1)).written).toBe(true);
    expect(f.patches).toHaveLength(2);
  });
});

describe('the unified status model (status/ engine) for a VA', () => {
  const va = { spec: { ...spec, variantCost: '10.0' } };
  // The engine's half of what writeStatus does with variantStatusWrite's inputs.
  const run = (inputs: Omit<Parameters<typeof variantStatusWrite>[0], 'previous'>, previous?: EngineStatus, now = t0) =>
    computeStatus({ generation: 2, now, previous, ...variantStatusWrite({ previous: undefined, ...inputs }).input });
  const cond = (s: { conditions: readonly { type: string; status: string; reason: string }[] }, type: string) => {
    const c = s.conditions.find((x) => x.type === type);
    return c ? [c.status, c.reason] : undefined;
  };

  it('Ready once the Deployment exists and a cycle decided from metrics', () => {
    const r = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 3)), decision: { ...decision, source: 'saturation' } });
    expect(r.status.phase).toBe('Ready');
    expect(cond(r.status, 'Ready')).toEqual(['True', 'AllComponentsReady']);
    expect(cond(r.status, 'TargetResolved')).toEqual(['True', 'TargetFound']);
    expect(cond(r.status, 'OptimizationReady')).toEqual(['True', 'OptimizationSucceeded']);
    expect(cond(r.status, 'ScaleTargetReady')).toEqual(['True', 'Ready']);
    expect(r.status.observedGeneration).toBe(2);
    expect(r.terminal).toBe(false);
  });

  it('seed 003 example 3: Deployment deleted → Ready=False/DeploymentNotFound, ConfigValid stays True, no retry loop', () => {
    const before = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 3)), decision: { ...decision, source: 'saturation' } });
    const after = run({ specErrors: [], target: resolveTarget(va, undefined) }, before.status, t1);
    expect(after.status.phase).toBe('Pending');
    expect(cond(after.status, 'Ready')).toEqual(['False', 'DeploymentNotFound']);
    expect(cond(after.status, 'ConfigValid')).toEqual(['True', 'ConfigurationValid']);
    expect(cond(after.status, 'TargetResolved')).toEqual(['False', 'TargetNotFound']);
    expect(cond(after.status, 'MetricsAvailable')).toEqual(['False', 'MetricsMissing']);
    expect(cond(after.status, 'OptimizationReady')).toEqual(['False', 'MetricsUnavailable']);
    expect(after.terminal).toBe(false);
    expect(after.requeueAfterMs).toBeUndefined();
    // Ready True → False is a failure worth a Warning; TargetResolved (upstream, polarity unknown) is not.
    expect(after.transitions.find((t) => t.type === 'Ready')?.eventType).toBe('Warning');
    expect(after.transitions.find((t) => t.type === 'TargetResolved')?.eventType).toBeUndefined();
  });

  it('a new VA before its first cycle is Starting, without a Warning', () => {
    const r = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 1)) });
    expect(r.status.phase).toBe('Starting');
    expect(cond(r.status, 'Ready')).toEqual(['False', 'AwaitingOptimization']);
    expect(r.transitions.filter((t) => t.eventType === 'Warning')).toEqual([]);
  });

  it('missing metrics keep it Starting with the reason from MetricsAvailable', () => {
    const missing = { ...decision, source: 'no-metrics' as const, metricsAvailable: { type: 'MetricsAvailable', status: 'False' as const, reason: 'MetricsMissing', message: 'No saturation metrics' } };
    const r = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 1)), decision: missing });
    expect(r.status.phase).toBe('Starting');
    expect(cond(r.status, 'ScalingReady')).toEqual(['False', 'MetricsMissing']);
  });

  it('a spec the API accepts but cannot work: ConfigValid=False naming the field, Failed, terminal', () => {
    const bad = { spec: { ...spec, variantCost: '1', scaleTargetRef: { kind: 'ReplicaSet', name: 'llama-8b' } } };
    const problems = targetSpecProblems(bad.spec.scaleTargetRef);
    expect(problems).toEqual([
      'spec.scaleTargetRef.kind: "ReplicaSet" is not supported: the autoscaler scales apps/v1 Deployment, apps/v1 StatefulSet, leaderworkerset.x-k8s.io/v1 LeaderWorkerSet, workload.serving.volcano.sh/v1alpha1 ModelServing',
    ]);
    expect(targetSpecProblems({ kind: 'StatefulSet', apiVersion: 'apps/v1beta1', name: 'x' })).toEqual(['spec.scaleTargetRef.apiVersion: "apps/v1beta1" is not supported: use "apps/v1" or leave it out']);
    expect(targetSpecProblems({ kind: 'LeaderWorkerSet', apiVersion: 'leaderworkerset.x-k8s.io/v1', name: 'x' })).toEqual([]);
    const r = run({ specErrors: problems, target: resolveTarget(bad, undefined) });
    expect(r.status.phase).toBe('Failed');
    expect(cond(r.status, 'ConfigValid')).toEqual(['False', 'InvalidSpec']);
    expect(r.status.conditions.find((c) => c.type === 'ConfigValid')?.message).toContain('spec.scaleTargetRef.kind');
    expect(cond(r.status, 'Stalled')).toEqual(['True', 'InvalidSpec']);
    expect(r.terminal).toBe(true);
  });

  it('a Prometheus failure: DependenciesReachable=False at once, Degraded only after the grace period', () => {
    const ok = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 2)), decision: { ...decision, source: 'saturation' } });
    const failing = {
      ...decision,
      source: 'prometheus-error' as const,
      metricsAvailable: { type: 'MetricsAvailable', status: 'False' as const, reason: 'PrometheusError', message: 'Prometheus query failed: connection refused' },
    };
    const first = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 2)), decision: failing }, ok.status, t1);
    expect(cond(first.status, 'DependenciesReachable')).toEqual(['False', 'PrometheusError']);
    expect(first.status.phase).toBe('Ready');
    expect(first.requeueAfterMs).toBe(10_000);
    const later = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 2)), decision: failing }, first.status, new Date(t1.getTime() + 11_000));
    expect(later.status.phase).toBe('Degraded');
    expect(cond(later.status, 'Ready')).toEqual(['False', 'DependenciesUnreachable']);
  });

  it('issue 14 scenario 7: Prometheus refusing the credentials → AuthValid=False, Ready=False/AuthFailed, Degraded; DependenciesReachable stays True', () => {
    const ok = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 2)), decision: { ...decision, source: 'saturation' } });
    const refused = {
      ...decision,
      source: 'prometheus-auth' as const,
      metricsAvailable: { type: 'MetricsAvailable', status: 'False' as const, reason: 'PrometheusError', message: 'Prometheus refused the credentials: answered 401 Unauthorized' },
    };
    const r = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 2)), decision: refused }, ok.status, t1);
    expect(cond(r.status, 'AuthValid')).toEqual(['False', 'AuthFailed']);
    expect(cond(r.status, 'Ready')).toEqual(['False', 'AuthFailed']);
    expect(cond(r.status, 'DependenciesReachable')).toEqual(['True', 'Reachable']);
    expect(r.status.phase).toBe('Degraded');
  });

  it('issue 14 scenarios 3 and 8: a VA left out of the cycle says why on its conditions', () => {
    const ok = run({ specErrors: [], target: resolveTarget(va, deployment('llama-8b', 2)), decision: { ...decision, source: 'saturation' } });
    const zero = run(
      { specErrors: [], target: resolveTarget(va, deployment('llama-8b', 0)), inactive: { reason: 'target-scaled-to-zero', message: 'Deployment llama-8b has 0 replicas', currentReplicas: 0 } },
      ok.status,
      t1,
    );
    expect(cond(zero.status, 'OptimizationReady')).toEqual(['False', 'SkippedProcessing']);
    expect(cond(zero.status, 'MetricsAvailable')).toEqual(['False', 'MetricsMissing']);
    expect(zero.status.conditions.find((c) => c.type === 'OptimizationReady')?.message).toBe('Deployment llama-8b has 0 replicas: left out of optimization, desired 0 published so that it stays there');
    // Idle is not broken: still Ready.
    expect(zero.status.phase).toBe('Ready');
    const dup = run(
      { specErrors: [], target: resolveTarget(va, deployment('llama-8b', 2)), inactive: { reason: 'duplicate-target', message: 'Deployment llama-8b is already scaled by VariantAutoscaling a', currentReplicas: 2 } },
      ok.status,
      t1,
    );
    expect(cond(dup.status, 'ScalingReady')).toEqual(['False', 'DuplicateTarget']);
    expect(cond(dup.status, 'Ready')?.[0]).toBe('False');
  });
});

describe('issue 14 scenario 8: status only on change', () => {
  it('an unchanged decision from a later cycle keeps lastRunTime and writes nothing', async () => {
    const f = new VaFixture();
    const target = resolveTarget({ spec: { ...spec, variantCost: '10.0' } }, deployment('llama-8b', 3));
    expect((await f.write({ target, decision, actuationApplied: true }, t0)).written).toBe(true);
    const later = { ...decision, decidedAt: '2026-01-29T10:05:00Z' };
    expect((await f.write({ target, decision: later, actuationApplied: true }, t1)).written).toBe(false);
    expect(valid(f.object.status).desiredOptimizedAlloc?.lastRunTime).toBe('2026-01-29T10:00:00Z');
    // A new value is a new decision: its time is written with it.
    await f.write({ target, decision: { ...later, desiredReplicas: 4 }, actuationApplied: true }, t1);
    expect(valid(f.object.status).desiredOptimizedAlloc).toEqual({ accelerator: 'A100', numReplicas: 4, lastRunTime: '2026-01-29T10:05:00Z' });
  });
});
