/**
 * Where the autoscaler's ConfigMaps live. Two generations of default names are read: seed 003's
 * (WVA v0.5.0's) and the `wva-*` names WVA uses since v0.5.1; when both exist the newer one wins
 * (config-store.ts says so with an Event). An environment variable, as WVA reads it, names exactly one
 * ConfigMap and replaces both defaults.
 */
import { z } from 'zod';

export const DEFAULT_CONTROLLER_NAMESPACE = 'workload-variant-autoscaler-system';
/** Seed 003's names (WVA v0.5.0). */
export const DEFAULT_CONTROLLER_CONFIG_MAP = 'workload-variant-autoscaler-variantautoscaling-config';
export const DEFAULT_SATURATION_CONFIG_MAP = 'saturation-scaling-config';
export const DEFAULT_SCALE_TO_ZERO_CONFIG_MAP = 'model-scale-to-zero-config';
/** WVA's names since v0.5.1: they win over seed 003's when both exist. */
export const WVA_CONTROLLER_CONFIG_MAP = 'wva-variantautoscaling-config';
export const WVA_SATURATION_CONFIG_MAP = 'wva-saturation-scaling-config';
export const WVA_SCALE_TO_ZERO_CONFIG_MAP = 'wva-model-scale-to-zero-config';
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
  VARIANT_NAME_LABEL: z.enum(['variantautoscaling', 'scale-target'], { error: 'must be "variantautoscaling" or "scale-target"' }),
} as const;

/**
 * What the `variant_name` label of the wva_* gauges carries: the VariantAutoscaling's name, as WVA
 * writes it since v0.5.1 (the default), or its scale target's name, as WVA v0.5.0 did.
 */
export type VariantNameLabel = z.infer<typeof ENV.VARIANT_NAME_LABEL>;

export type ConfigMapRole = 'controller' | 'saturation' | 'scaleToZero';
export const CONFIG_MAP_ROLES: readonly ConfigMapRole[] = ['controller', 'saturation', 'scaleToZero'];

export interface AutoscalerNames {
  namespace: string;
  /**
   * Per role, the names to look for, first wins: `[wva-*, seed 003's]` by default, or the one name an
   * environment variable sets.
   */
  configMaps: Record<ConfigMapRole, readonly string[]>;
  serviceMonitor: string;
  /** Multi-controller isolation: only VAs labelled with this instance are managed, and metrics carry it. */
  controllerInstance?: string;
  /** `VARIANT_NAME_LABEL`: whose name the gauges' `variant_name` carries. */
  variantNameLabel: VariantNameLabel;
}

/**
 * Names from the environment. An empty variable means "not set", as in WVA; a malformed one is
 * reported and the default used.
 */
export function autoscalerNames(env: Readonly<Record<string, string | undefined>>): { names: AutoscalerNames; problems: string[] } {
  const problems: string[] = [];
  const read = <K extends keyof typeof ENV>(key: K): z.infer<(typeof ENV)[K]> | undefined => {
    const raw = env[key];
    if (raw === undefined || raw === '') return undefined;
    const r = ENV[key].safeParse(raw) as z.ZodSafeParseResult<z.infer<(typeof ENV)[K]>>;
    if (r.success) return r.data;
    problems.push(`${key}=${JSON.stringify(raw)} ${r.error.issues[0]?.message ?? 'is invalid'}; using the default`);
    return undefined;
  };
  const instance = read('CONTROLLER_INSTANCE');
  return {
    names: {
      namespace: read('POD_NAMESPACE') ?? DEFAULT_CONTROLLER_NAMESPACE,
      configMaps: {
        controller: candidates(read('CONFIG_MAP_NAME'), WVA_CONTROLLER_CONFIG_MAP, DEFAULT_CONTROLLER_CONFIG_MAP),
        saturation: candidates(read('SATURATION_CONFIG_MAP_NAME'), WVA_SATURATION_CONFIG_MAP, DEFAULT_SATURATION_CONFIG_MAP),
        scaleToZero: candidates(read('SCALE_TO_ZERO_CONFIG_MAP_NAME'), WVA_SCALE_TO_ZERO_CONFIG_MAP, DEFAULT_SCALE_TO_ZERO_CONFIG_MAP),
      },
      serviceMonitor: read('SERVICE_MONITOR_NAME') ?? DEFAULT_SERVICE_MONITOR,
      ...(instance !== undefined ? { controllerInstance: instance } : {}),
      variantNameLabel: read('VARIANT_NAME_LABEL') ?? 'variantautoscaling',
    },
    problems,
  };
}

function candidates(override: string | undefined, current: string, seed: string): readonly string[] {
  return override !== undefined ? [override] : [current, seed];
}

/** The name a role's messages use when none of its ConfigMaps exists: the preferred one. */
export function preferredName(names: AutoscalerNames, role: ConfigMapRole): string {
  return names.configMaps[role][0] ?? '';
}

/** The ConfigMaps seed 003 watches (controller and saturation), every generation. */
export function watchedConfigMapNames(names: AutoscalerNames): Set<string> {
  return new Set([...names.configMaps.controller, ...names.configMaps.saturation]);
}
