/**
 * The configuration as held in Redis between ConfigMap refreshes: the parsed ConfigMaps (so an entry
 * that turns bad keeps its last good value on any worker) and the resourceVersions they were parsed
 * from (so an unchanged ConfigMap is not parsed, nor its problems reported, again). Read back with
 * zod: Redis is a boundary, and an older Ripple may have written it. Secrets are never part of it
 * (stored-secrets.ts).
 */
import { z } from 'zod';
import { parseJson } from '../../../kube/json.js';
import { DEFAULT_CONTROLLER_CONFIG, type ControllerConfig } from './controller-config.js';
import { BUILT_IN_SATURATION_CONFIG, saturationEntrySchema, type SaturationConfigSet } from './saturation-config.js';
import { EMPTY_SCALE_TO_ZERO_CONFIG, type ScaleToZeroConfigSet } from './scale-to-zero-config.js';
import { holdsSecrets, storableControllerConfig } from './stored-secrets.js';

const ms = z.number().min(0);

const controllerConfigSchema = z.object({
  prometheus: z.object({
    baseUrl: z.string().optional(),
    tlsInsecureSkipVerify: z.boolean(),
    caCertPath: z.string().optional(),
    clientCertPath: z.string().optional(),
    clientKeyPath: z.string().optional(),
    serverName: z.string().optional(),
    // Read only so that a record an older Ripple wrote with it is recognised and rewritten without it.
    bearerToken: z.string().optional(),
    tokenPath: z.string().optional(),
  }),
  globalOptIntervalMs: z.number().min(1000),
  scaleToZero: z.boolean(),
  limitedMode: z.boolean(),
  nodeSelector: z.string().optional(),
  eppMetricReaderBearerToken: z.string().optional(),
  // A record an older Ripple stored with `metricsCache` fails here and is rebuilt from the ConfigMaps.
  metricsFreshness: z.object({ freshThresholdMs: ms, unavailableThresholdMs: ms }),
}) satisfies z.ZodType<ControllerConfig>;

const thresholdsSchema = z.object({
  kvCacheThreshold: z.number(),
  queueLengthThreshold: z.number(),
  kvSpareTrigger: z.number(),
  queueSpareTrigger: z.number(),
  enableLimiter: z.boolean(),
  // Stored before Saturation V2: V1 and upstream's V2 defaults.
  analyzerName: z.string().default(''),
  scaleUpThreshold: z.number().default(0.85),
  scaleDownBoundary: z.number().default(0.7),
});

const saturationConfigSetSchema = z.object({
  default: thresholdsSchema,
  defaultSource: z.enum(['configmap', 'built-in']),
  entries: z.record(z.string(), saturationEntrySchema),
  overrides: z.array(z.object({ key: z.string(), modelID: z.string(), namespace: z.string(), thresholds: thresholdsSchema })),
}) satisfies z.ZodType<SaturationConfigSet>;

const scaleToZeroEntrySchema = z.object({
  modelID: z.string().optional(),
  namespace: z.string().optional(),
  enabled: z.boolean().optional(),
  retentionMs: z.number().positive().optional(),
});
const scaleToZeroConfigSetSchema = z.object({
  default: scaleToZeroEntrySchema.optional(),
  entries: z.record(z.string(), scaleToZeroEntrySchema),
}) satisfies z.ZodType<ScaleToZeroConfigSet>;

/** Which version of a ConfigMap was parsed: `uid/resourceVersion`, or `absent`. */
const versionSchema = z.string();

export const storedConfigSchema = z.object({
  controller: controllerConfigSchema,
  saturation: saturationConfigSetSchema,
  scaleToZero: scaleToZeroConfigSetSchema,
  versions: z.object({ controller: versionSchema, saturation: versionSchema, scaleToZero: versionSchema }),
  namespaces: z.record(z.string(), z.object({ version: versionSchema, saturation: saturationConfigSetSchema })).optional(),
  /** RFC 3339: when a ConfigMap change was last applied. */
  refreshedAt: z.string(),
});
export interface StoredConfig {
  controller: ControllerConfig;
  saturation: SaturationConfigSet;
  scaleToZero: ScaleToZeroConfigSet;
  versions: { controller: string; saturation: string; scaleToZero: string };
  /**
   * Namespace-local saturation ConfigMaps (WVA since v0.5.1), by namespace: the version parsed and its
   * configuration (used only when it has a usable entry). Only namespaces with VAs and such a ConfigMap.
   */
  namespaces?: Record<string, { version: string; saturation: SaturationConfigSet }>;
  refreshedAt: string;
}

/** Before any ConfigMap was read: WVA's documented defaults. */
export function initialConfig(now: Date): StoredConfig {
  return {
    controller: DEFAULT_CONTROLLER_CONFIG,
    saturation: BUILT_IN_SATURATION_CONFIG,
    scaleToZero: EMPTY_SCALE_TO_ZERO_CONFIG,
    versions: { controller: '', saturation: '', scaleToZero: '' },
    refreshedAt: now.toISOString(),
  };
}

export interface StoredConfigRead {
  /** Undefined when there is none or it cannot be read (then it is rebuilt); never with secrets. */
  config: StoredConfig | undefined;
  /** The record as stored held secrets (written by an older Ripple): write it again without them. */
  heldSecrets: boolean;
}

export function readStoredConfigText(text: string | null): StoredConfigRead {
  if (text === null) return { config: undefined, heldSecrets: false };
  const r = storedConfigSchema.safeParse(parseJson(text));
  if (!r.success) return { config: undefined, heldSecrets: false };
  return { config: { ...r.data, controller: storableControllerConfig(r.data.controller) }, heldSecrets: holdsSecrets(r.data.controller) };
}

/** The stored configuration, or undefined when there is none or it cannot be read (then it is rebuilt). */
export function parseStoredConfig(text: string | null): StoredConfig | undefined {
  return readStoredConfigText(text).config;
}
