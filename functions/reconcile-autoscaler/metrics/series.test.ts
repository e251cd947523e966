import { describe, expect, it } from 'vitest';
import { metricLabelNames, replicaSeries, variantNameLabelValue } from './series.js';

describe('replicaSeries', () => {
  it('exports the four gauges with WVA’s labels; ratio = desired/current', () => {
    expect(replicaSeries({ variantName: 'vllme-deployment', namespace: 'llm-d-sim', accelerator: 'A100' }, 2, 3)).toEqual([
      { name: 'wva_current_replicas', labels: { variant_name: 'vllme-deployment', namespace: 'llm-d-sim', accelerator_type: 'A100' }, value: 2 },
      { name: 'wva_desired_replicas', labels: { variant_name: 'vllme-deployment', namespace: 'llm-d-sim', accelerator_type: 'A100' }, value: 3 },
      { name: 'wva_optimized_replicas', labels: { variant_name: 'vllme-deployment', namespace: 'llm-d-sim', accelerator_type: 'A100' }, value: 3 },
      { name: 'wva_desired_ratio', labels: { variant_name: 'vllme-deployment', namespace: 'llm-d-sim', accelerator_type: 'A100' }, value: 1.5 },
    ]);
  });

  it('uses desired as the ratio when current is 0, and adds controller_instance when configured', () => {
    const s = replicaSeries({ variantName: 'd', namespace: 'n', accelerator: 'H100', controllerInstance: 'team-a' }, 0, 2);
    expect(s.find((x) => x.name === 'wva_desired_ratio')?.value).toBe(2);
    expect(s[0]?.labels).toEqual({ variant_name: 'd', namespace: 'n', accelerator_type: 'H100', controller_instance: 'team-a' });
    expect(metricLabelNames('team-a')).toEqual(['variant_name', 'namespace', 'accelerator_type', 'controller_instance']);
    expect(metricLabelNames(undefined)).toEqual(['variant_name', 'namespace', 'accelerator_type']);
  });
});

describe('variantNameLabelValue', () => {
  it("is the VA's name by default (WVA since v0.5.1), the scale target's with scale-target (v0.5.0)", () => {
    expect(variantNameLabelValue('variantautoscaling', 'llm/llama-8b-autoscaler', 'llama-8b')).toBe('llama-8b-autoscaler');
    expect(variantNameLabelValue('scale-target', 'llm/llama-8b-autoscaler', 'llama-8b')).toBe('llama-8b');
  });
});
