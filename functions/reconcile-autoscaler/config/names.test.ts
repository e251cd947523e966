import { describe, expect, it } from 'vitest';
import { autoscalerNames } from './names.js';

describe('autoscalerNames', () => {
  it("reads both generations of names by default, WVA v0.5.1's first, then seed 003's", () => {
    expect(autoscalerNames({})).toEqual({
      names: {
        namespace: 'workload-variant-autoscaler-system',
        configMaps: {
          controller: ['wva-variantautoscaling-config', 'workload-variant-autoscaler-variantautoscaling-config'],
          saturation: ['wva-saturation-scaling-config', 'saturation-scaling-config'],
          scaleToZero: ['wva-model-scale-to-zero-config', 'model-scale-to-zero-config'],
        },
        serviceMonitor: 'workload-variant-autoscaler-controller-manager-metrics-monitor',
        variantNameLabel: 'variantautoscaling',
      },
      problems: [],
    });
  });

  it('takes overrides from the environment, empty meaning unset', () => {
    const { names, problems } = autoscalerNames({
      POD_NAMESPACE: 'wva',
      CONFIG_MAP_NAME: 'wva-variantautoscaling-config',
      SATURATION_CONFIG_MAP_NAME: '',
      CONTROLLER_INSTANCE: 'team-a',
    });
    expect(problems).toEqual([]);
    expect(names.namespace).toBe('wva');
    // A variable names exactly one ConfigMap; an empty one leaves both generations.
    expect(names.configMaps.controller).toEqual(['wva-variantautoscaling-config']);
    expect(names.configMaps.saturation).toEqual(['wva-saturation-scaling-config', 'saturation-scaling-config']);
    expect(names.controllerInstance).toBe('team-a');
  });

  it("variant_name carries the VA's name unless VARIANT_NAME_LABEL=scale-target (WVA v0.5.0)", () => {
    expect(autoscalerNames({ VARIANT_NAME_LABEL: 'scale-target' }).names.variantNameLabel).toBe('scale-target');
    const bad = autoscalerNames({ VARIANT_NAME_LABEL: 'deployment' });
    expect(bad.names.variantNameLabel).toBe('variantautoscaling');
    expect(bad.problems).toEqual(['VARIANT_NAME_LABEL="deployment" must be "variantautoscaling" or "scale-target"; using the default']);
  });

  it('reports a malformed override and keeps the default', () => {
    const { names, problems } = autoscalerNames({ SATURATION_CONFIG_MAP_NAME: 'Bad_Name' });
    expect(names.configMaps.saturation).toEqual(['wva-saturation-scaling-config', 'saturation-scaling-config']);
    expect(problems).toEqual(['SATURATION_CONFIG_MAP_NAME="Bad_Name" must be a lowercase DNS subdomain name; using the default']);
  });
});
