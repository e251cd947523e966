/**
 * The gauges the autoscaler exports for HPA and KEDA, as data: names, label names and the values of
 * one VA's series. The ops server owns the registry; this only says what to set or remove.
 */
import type { VariantNameLabel } from '../config/names.js';
import { variantNameOfKey } from '../keys.js';

export const METRIC = {
  desiredReplicas: 'wva_desired_replicas',
  currentReplicas: 'wva_current_replicas',
  desiredRatio: 'wva_desired_ratio',
  /** Seed 003's name for the desired replicas; same value as wva_desired_replicas. */
  optimizedReplicas: 'wva_optimized_replicas',
} as const;
export type MetricName = (typeof METRIC)[keyof typeof METRIC];

export const METRIC_HELP: Record<MetricName, string> = {
  wva_desired_replicas: 'Replicas the autoscaler wants for the variant',
  wva_current_replicas: 'Replicas the variant has now',
  wva_desired_ratio: 'Desired replicas divided by current replicas (the desired count when current is 0)',
  wva_optimized_replicas: 'Replicas the optimizer chose for the variant (same as wva_desired_replicas)',
};

/**
 * When the last optimization cycle ran (Unix seconds): a metric, not a status write per VA per cycle
 * (issue 14 scenario 8). `time() - wva_last_optimization_timestamp_seconds` alerts on a stalled loop.
 */
export const LAST_OPTIMIZATION_METRIC = 'wva_last_optimization_timestamp_seconds';
export const LAST_OPTIMIZATION_HELP = 'Unix time of the last optimization cycle';

export const LABEL = {
  variantName: 'variant_name',
  namespace: 'namespace',
  acceleratorType: 'accelerator_type',
  controllerInstance: 'controller_instance',
} as const;

/** Label names of every gauge; controller_instance only when an instance is configured. */
export function metricLabelNames(controllerInstance: string | undefined): string[] {
  const names: string[] = [LABEL.variantName, LABEL.namespace, LABEL.acceleratorType];
  if (controllerInstance !== undefined) names.push(LABEL.controllerInstance);
  return names;
}

export interface SeriesKey {
  /** The `variant_name` label: see `variantNameLabelValue`. */
  variantName: string;
  namespace: string;
  accelerator: string;
  controllerInstance?: string;
}

export function seriesLabels(k: SeriesKey): Record<string, string> {
  return {
    [LABEL.variantName]: k.variantName,
    [LABEL.namespace]: k.namespace,
    [LABEL.acceleratorType]: k.accelerator,
    ...(k.controllerInstance !== undefined ? { [LABEL.controllerInstance]: k.controllerInstance } : {}),
  };
}

export interface Series {
  name: MetricName;
  labels: Record<string, string>;
  value: number;
}

export function replicaSeries(k: SeriesKey, current: number, desired: number): Series[] {
  const labels = seriesLabels(k);
  return [
    { name: METRIC.currentReplicas, labels, value: current },
    { name: METRIC.desiredReplicas, labels, value: desired },
    { name: METRIC.optimizedReplicas, labels, value: desired },
    { name: METRIC.desiredRatio, labels, value: current === 0 ? desired : desired / current },
  ];
}

/**
 * The `variant_name` of a VA's series. WVA writes the VariantAutoscaling's name since v0.5.1 (commit
 * 4cbe71f), so current HPA and ScaledObject samples select on it (for a variant found on an annotated
 * HPA or ScaledObject, that object's name, as current WVA writes it); WVA v0.5.0 wrote the scale target's
 * name, which `VARIANT_NAME_LABEL=scale-target` keeps for selectors written then.
 */
export function variantNameLabelValue(mode: VariantNameLabel, vaKey: string, scaleTargetName: string): string {
  return mode === 'scale-target' ? scaleTargetName : variantNameOfKey(vaKey);
}
