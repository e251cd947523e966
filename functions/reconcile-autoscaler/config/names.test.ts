import { describe, expect, it } from 'vitest';
import { autoscalerNames } from './names.js';

describe('autoscalerNames', () => {
  it('uses seed 003 names by default', () => {
    expect(autoscalerNames({})).toEqual({
      names: {
        namespace: 'workload-variant-autoscaler-system',
        controllerConfigMap: 'workload-variant-autoscaler-variantautoscaling-config',
        saturationConfigMap: 'saturation-scaling-config',
        scaleToZeroConfigMap: 'model-scale-to-zero-config',
        serviceMonitor: 'workload-variant-autoscaler-controller-manager-metrics-monitor',
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
    expect(names.controllerConfigMap).toBe('wva-variantautoscaling-config');
    expect(names.saturationConfigMap).toBe('saturation-scaling-config');
    expect(names.controllerInstance).toBe('team-a');
  });

  it('reports a malformed override and keeps the default', () => {
    const { names, problems } = autoscalerNames({ SATURATION_CONFIG_MAP_NAME: 'Bad_Name' });
    expect(names.saturationConfigMap).toBe('saturation-scaling-config');
    expect(problems).toEqual(['SATURATION_CONFIG_MAP_NAME="Bad_Name" must be a lowercase DNS subdomain name; using the default']);
  });
});
