import { describe, expect, it } from 'vitest';
import { parseVariantAutoscaling, type VariantAutoscalingStatus } from '../../../api/variantautoscaling.js';
import { deployment } from '../saturation/test-helpers.js';
import { computeStatus, type EngineStatus } from '../../../status/index.js';
import { resolveTarget, targetSpecProblems } from '../target/resolve.js';
import { nextVariantAutoscalingStatus, statusEquals, unifiedStatusInputs, upstreamStatus, wholeFieldsPatch } from './va-status.js';

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

function valid(status: VariantAutoscalingStatus) {
  const r = parseVariantAutoscaling({ metadata: { name: 'v' }, spec, status });
  expect(r.ok, r.ok ? '' : r.errors.join('\n')).toBe(true);
}

describe('nextVariantAutoscalingStatus', () => {
  it('writes the whole desiredOptimizedAlloc and persists all three conditions', () => {
    const s = nextVariantAutoscalingStatus({ previous: undefined, generation: 1, now: t0, target: resolveTarget({ spec: { ...spec, variantCost: '10.0' } }, deployment('llama-8b', 3)), decision, actuationApplied: true });
    expect(s.desiredOptimizedAlloc).toEqual({ accelerator: 'A100', numReplicas: 3, lastRunTime: '2026-01-29T10:00:00Z' });
    expect(s.currentAllocation).toEqual({ numReplicas: 3, accelerator: 'A100' });
    expect(s.actuation).toEqual({ applied: true });
    expect(s.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['TargetResolved', 'True', 'TargetFound'],
      ['MetricsAvailable', 'True', 'MetricsFound'],
      ['OptimizationReady', 'True', 'OptimizationSucceeded'],
    ]);
    valid(s);
  });

  it('writes numReplicas 0 (never dropped)', () => {
    const s = nextVariantAutoscalingStatus({ previous: undefined, now: t0, target: resolveTarget({ spec: { ...spec, variantCost: '1' } }, deployment('llama-8b', 1)), decision: { ...decision, desiredReplicas: 0 } });
    expect(s.desiredOptimizedAlloc).toEqual({ accelerator: 'A100', numReplicas: 0, lastRunTime: '2026-01-29T10:00:00Z' });
    valid(s);
  });

  it('after the Deployment is deleted: seed 003 example 3', () => {
    const before = nextVariantAutoscalingStatus({ previous: undefined, generation: 1, now: t0, target: resolveTarget({ spec: { ...spec, variantCost: '1' } }, deployment('llama-8b', 3)), decision });
    const after = nextVariantAutoscalingStatus({ previous: before, generation: 1, now: t1, target: resolveTarget({ spec: { ...spec, variantCost: '1' } }, undefined) });
    expect(after.conditions?.map((c) => [c.type, c.status, c.reason, c.message, c.lastTransitionTime])).toEqual([
      ['TargetResolved', 'False', 'TargetNotFound', 'Scale target Deployment llama-8b not found', '2026-01-29T10:01:00Z'],
      ['MetricsAvailable', 'False', 'MetricsMissing', 'No metrics: scale target Deployment llama-8b is gone', '2026-01-29T10:01:00Z'],
      ['OptimizationReady', 'False', 'MetricsUnavailable', 'Not optimized until scale target Deployment llama-8b exists', '2026-01-29T10:01:00Z'],
    ]);
    expect(after.currentAllocation).toEqual({ numReplicas: 0 });
    valid(after);
    // recreated → resolved again
    const again = nextVariantAutoscalingStatus({ previous: after, generation: 1, now: t1, target: resolveTarget({ spec: { ...spec, variantCost: '1' } }, deployment('llama-8b', 1)) });
    expect(again.conditions?.[0]).toMatchObject({ status: 'True', reason: 'TargetFound', message: 'Scale target Deployment llama-8b found' });
  });

  it('is stable: the same inputs give an equal status, so nothing is rewritten', () => {
    const target = resolveTarget({ spec: { ...spec, variantCost: '1' } }, deployment('llama-8b', 3));
    const a = nextVariantAutoscalingStatus({ previous: undefined, generation: 1, now: t0, target, decision });
    const b = nextVariantAutoscalingStatus({ previous: a, generation: 1, now: t1, target, decision });
    expect(statusEquals(a, b)).toBe(true);
    const c = nextVariantAutoscalingStatus({ previous: b, generation: 1, now: t1, target, decision: { ...decision, desiredReplicas: 4, decidedAt: '2026-01-29T10:01:00Z' } });
    expect(statusEquals(b, c)).toBe(false);
  });
});

describe('the unified status model (status/ engine) for a VA', () => {
  const va = { spec: { ...spec, variantCost: '10.0' } };
  const run = (inputs: Parameters<typeof unifiedStatusInputs>[0], previous?: EngineStatus, now = t0) => {
    const upstream = upstreamStatus({ previous: undefined, target: inputs.target, ...(inputs.decision ? { decision: inputs.decision } : {}) });
    return computeStatus({ generation: 2, now, previous, ...unifiedStatusInputs(inputs), upstreamConditions: upstream.conditions });
  };
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
    const bad = { spec: { ...spec, variantCost: '1', scaleTargetRef: { kind: 'StatefulSet', name: 'llama-8b' } } };
    const problems = targetSpecProblems(bad.spec.scaleTargetRef);
    expect(problems).toEqual(['spec.scaleTargetRef.kind: "StatefulSet" is not supported: the autoscaler scales Deployments']);
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
});

describe('wholeFieldsPatch', () => {
  it('removes nested keys the new value lacks, and sends nothing extra once they are gone', () => {
    const previous: VariantAutoscalingStatus = { currentAllocation: { numReplicas: 3, accelerator: 'A100' }, desiredOptimizedAlloc: { accelerator: 'A100', numReplicas: 3 } };
    expect(wholeFieldsPatch(previous, { currentAllocation: { numReplicas: 0 }, actuation: { applied: false } })).toEqual({
      currentAllocation: { numReplicas: 0, accelerator: null },
      actuation: { applied: false },
    });
    expect(wholeFieldsPatch({ currentAllocation: { numReplicas: 0 } }, { currentAllocation: { numReplicas: 0 } })).toEqual({ currentAllocation: { numReplicas: 0 } });
    expect(wholeFieldsPatch(undefined, { desiredOptimizedAlloc: { accelerator: 'A100', numReplicas: 0, lastRunTime: '2026-01-29T10:00:00Z' } })).toEqual({
      desiredOptimizedAlloc: { accelerator: 'A100', numReplicas: 0, lastRunTime: '2026-01-29T10:00:00Z' },
    });
  });
});
