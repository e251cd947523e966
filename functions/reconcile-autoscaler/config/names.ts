/**
 * Where the autoscaler's ConfigMaps live. The names are seed 003's (WVA v0.5.0's defaults), each
 * overridable by the same environment variables WVA reads.
 */
import { z } from 'zod';

export const DEFAULT_CONTROLLER_NAMESPACE = 'workload-variant-autoscaler-system';
export const DEFAULT_CONTROLLER_CONFIG_MAP = 'workload-variant-autoscaler-variantautoscaling-config';
export const DEFAULT_SATURATION_CONFIG_MAP = 'saturation-scaling-config';
export const DEFAULT_SCALE_TO_ZERO_CONFIG_MAP = 'model-scale-to-zero-config';
export const DEFAULT_SERVICE_MONITOR = 'workload-variant-autoscaler-controller-manager-metrics-monitor';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const objectName = z.string().max(253).regex(DNS_SUBDOMAIN, { error: 'must be a lowercase DNS subdomain name' });

const ENV = {
  POD_NAMESPACE: z.string().max(63).regex(DNS_LABEL, { error: 'must be a namespace name' }),
  CONFIG_MAP_NAME: objectName,
  SATURATION_CONFIG_MAP_NAME: objectName,
  SCALE_TO_ZERO_CONFIG_MAP_NAME: objectName,
  SERVICE_MONITOR_NAME: objectName,
  CONTROLLER_INSTANCE: z.string().max(63).regex(LABEL_VALUE, { error: 'must be a valid label value' }),
} as const;

export interface AutoscalerNames {
  namespace: string;
  controllerConfigMap: string;
  saturationConfigMap: string;
  scaleToZeroConfigMap: string;
  serviceMonitor: string;
  /** Multi-controller isolation: only VAs labelled with this instance are managed, and metrics carry it. */
  controllerInstance?: string;
}

/**
 * Names from the environment. An empty variable means "not set", as in WVA; a malformed one is
 * reported and the default used.
 */
export function autoscalerNames(env: Readonly<Record<string, string | undefined>>): { names: AutoscalerNames; problems: string[] } {
  const problems: string[] = [];
  const read = (key: keyof typeof ENV): string | undefined => {
    const raw = env[key];
    if (raw === undefined || raw === '') return undefined;
    const r = ENV[key].safeParse(raw);
    if (r.success) return r.data;
    problems.push(`${key}=${JSON.stringify(raw)} ${r.error.issues[0]?.message ?? 'is invalid'}; using the default`);
    return undefined;
  };
  const instance = read('CONTROLLER_INSTANCE');
  return {
    names: {
      namespace: read('POD_NAMESPACE') ?? DEFAULT_CONTROLLER_NAMESPACE,
      controllerConfigMap: read('CONFIG_MAP_NAME') ?? DEFAULT_CONTROLLER_CONFIG_MAP,
      saturationConfigMap: read('SATURATION_CONFIG_MAP_NAME') ?? DEFAULT_SATURATION_CONFIG_MAP,
      scaleToZeroConfigMap: read('SCALE_TO_ZERO_CONFIG_MAP_NAME') ?? DEFAULT_SCALE_TO_ZERO_CONFIG_MAP,
      serviceMonitor: read('SERVICE_MONITOR_NAME') ?? DEFAULT_SERVICE_MONITOR,
      ...(instance !== undefined ? { controllerInstance: instance } : {}),
    },
    problems,
  };
}
