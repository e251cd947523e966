/**
 * The saturation ConfigMap (`saturation-scaling-config`). Each data key holds one YAML document:
 * `default` sets the thresholds for every model, and any other key is an override for one
 * `model_id` + `namespace` that changes only the fields it names.
 *
 * Unlike WVA v0.5.0 (see docs/autoscaler.md), a missing ConfigMap or `default` entry falls back to
 * the documented built-in thresholds, overrides are applied, and an entry that cannot be parsed keeps
 * its last good value.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { ConfigIssue } from './issues.js';
import { DEFAULT_SATURATION_CONFIG_MAP } from './names.js';

export interface SaturationThresholds {
  /** A replica is saturated when its KV-cache use (0..1) is at or above this. */
  kvCacheThreshold: number;
  /** A replica is saturated when its waiting queue is at or above this. */
  queueLengthThreshold: number;
  /** Scale up when the average spare KV-cache of non-saturated replicas falls below this. */
  kvSpareTrigger: number;
  /** Scale up when the average spare queue of non-saturated replicas falls below this. */
  queueSpareTrigger: number;
  /** Cap scale-ups by free GPUs. Read from the `default` entry only: the GPU pool is shared. */
  enableLimiter: boolean;
  /** `saturation` selects Saturation V2 (saturation/v2.ts), as upstream; empty: V1 (seed 003's analyzer). */
  analyzerName: string;
  /** V2: scale up when token demand exceeds this fraction of the anticipated supply. */
  scaleUpThreshold: number;
  /** V2: scale down while token demand stays below this fraction of the supply left. */
  scaleDownBoundary: number;
}

/** The analyzerName that selects Saturation V2 (upstream's IsV2). */
export const V2_ANALYZER_NAME = 'saturation';

export const BUILT_IN_SATURATION_THRESHOLDS: Readonly<SaturationThresholds> = Object.freeze({
  kvCacheThreshold: 0.8,
  queueLengthThreshold: 5,
  kvSpareTrigger: 0.1,
  queueSpareTrigger: 3,
  enableLimiter: false,
  analyzerName: '',
  scaleUpThreshold: 0.85,
  scaleDownBoundary: 0.7,
});

export const DEFAULT_ENTRY_KEY = 'default';

const fraction = (name: string) =>
  z.number({ error: `${name} must be a number between 0 and 1` }).min(0, { error: `${name} must be between 0 and 1` }).max(1, { error: `${name} must be between 0 and 1` });
const nonNegative = (name: string) =>
  z.number({ error: `${name} must be a number, 0 or more` }).min(0, { error: `${name} must be 0 or more` });
const upToOne = (name: string) =>
  z.number({ error: `${name} must be a number in (0, 1]` }).gt(0, { error: `${name} must be in (0, 1]` }).max(1, { error: `${name} must be in (0, 1]` });

export const saturationEntrySchema = z.object({
  model_id: z.string({ error: 'model_id must be a string' }).min(1, { error: 'model_id must not be empty' }).optional(),
  namespace: z.string({ error: 'namespace must be a string' }).min(1, { error: 'namespace must not be empty' }).optional(),
  kvCacheThreshold: fraction('kvCacheThreshold').optional(),
  queueLengthThreshold: nonNegative('queueLengthThreshold').optional(),
  kvSpareTrigger: fraction('kvSpareTrigger').optional(),
  queueSpareTrigger: nonNegative('queueSpareTrigger').optional(),
  enableLimiter: z.boolean({ error: 'enableLimiter must be true or false' }).optional(),
  // Saturation V2 (WVA since v0.9.0): `analyzerName: saturation` selects it; its two thresholds.
  analyzerName: z.string({ error: 'analyzerName must be a string ("saturation" for V2, empty for V1)' }).optional(),
  scaleUpThreshold: upToOne('scaleUpThreshold').optional(),
  scaleDownBoundary: upToOne('scaleDownBoundary').optional(),
});
export type SaturationEntry = z.infer<typeof saturationEntrySchema>;
const KNOWN_FIELDS = new Set(Object.keys(saturationEntrySchema.shape));

export interface SaturationOverride {
  key: string;
  modelID: string;
  namespace: string;
  thresholds: SaturationThresholds;
}

export interface SaturationConfigSet {
  default: SaturationThresholds;
  defaultSource: 'configmap' | 'built-in';
  /** Accepted entries by key, as written: the "last good" values for the next parse. */
  entries: Readonly<Record<string, SaturationEntry>>;
  /** Overrides in key order; at most one per model and namespace. */
  overrides: readonly SaturationOverride[];
}

export const BUILT_IN_SATURATION_CONFIG: SaturationConfigSet = {
  default: { ...BUILT_IN_SATURATION_THRESHOLDS },
  defaultSource: 'built-in',
  entries: {},
  overrides: [],
};

function merge(base: SaturationThresholds, e: SaturationEntry): SaturationThresholds {
  return {
    kvCacheThreshold: e.kvCacheThreshold ?? base.kvCacheThreshold,
    queueLengthThreshold: e.queueLengthThreshold ?? base.queueLengthThreshold,
    kvSpareTrigger: e.kvSpareTrigger ?? base.kvSpareTrigger,
    queueSpareTrigger: e.queueSpareTrigger ?? base.queueSpareTrigger,
    enableLimiter: e.enableLimiter ?? base.enableLimiter,
    analyzerName: e.analyzerName ?? base.analyzerName,
    scaleUpThreshold: e.scaleUpThreshold ?? base.scaleUpThreshold,
    scaleDownBoundary: e.scaleDownBoundary ?? base.scaleDownBoundary,
  };
}

type Checked = { ok: true; entry: SaturationEntry; unknown: string[] } | { ok: false; message: string };

function readEntry(text: string): Checked {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    return { ok: false, message: `not valid YAML: ${first}` };
  }
  const mapping = doc ?? {};
  if (typeof mapping !== 'object' || Array.isArray(mapping)) return { ok: false, message: 'must be a YAML mapping of threshold names to values' };
  const r = saturationEntrySchema.safeParse(mapping);
  if (!r.success) return { ok: false, message: r.error.issues.map((i) => i.message).join('; ') };
  const unknown = Object.keys(mapping).filter((k) => !KNOWN_FIELDS.has(k));
  return { ok: true, entry: r.data, unknown };
}

/** Rules that need the merged values; an override is checked against the default it inherits. */
function checkEntry(key: string, entry: SaturationEntry, base: SaturationThresholds): string | undefined {
  if (key !== DEFAULT_ENTRY_KEY) {
    if (entry.model_id === undefined || entry.namespace === undefined) {
      return 'an override must name both model_id and namespace';
    }
  }
  const t = merge(base, entry);
  if (t.analyzerName !== '' && t.analyzerName !== V2_ANALYZER_NAME) {
    return `analyzerName must be "${V2_ANALYZER_NAME}" (Saturation V2) or empty (V1), not ${JSON.stringify(t.analyzerName)}`;
  }
  if (t.kvCacheThreshold < t.kvSpareTrigger) {
    return `kvCacheThreshold (${t.kvCacheThreshold}) must be at least kvSpareTrigger (${t.kvSpareTrigger})`;
  }
  return undefined;
}

export interface ParsedSaturationConfig {
  config: SaturationConfigSet;
  issues: ConfigIssue[];
}

/**
 * Parse the saturation ConfigMap's data (undefined when the ConfigMap does not exist). Pass the
 * previous result's config so an entry that turned bad keeps its last good value.
 */
export function parseSaturationConfig(
  data: Readonly<Record<string, string | undefined>> | undefined,
  previous?: SaturationConfigSet,
  configMap: string = DEFAULT_SATURATION_CONFIG_MAP,
): ParsedSaturationConfig {
  const issues: ConfigIssue[] = [];
  const entries: Record<string, SaturationEntry> = {};
  const keys = Object.keys(data ?? {}).sort();

  const accept = (key: string, base: SaturationThresholds): SaturationEntry | undefined => {
    const text = data?.[key] ?? '';
    const read = readEntry(text);
    const problem = read.ok ? checkEntry(key, read.entry, base) : read.message;
    if (read.ok && problem === undefined) {
      if (read.unknown.length > 0) {
        issues.push({ configMap, key, severity: 'warning', message: `unknown field(s) ignored: ${read.unknown.join(', ')}`, fallback: 'none' });
      }
      return read.entry;
    }
    const last = previous?.entries[key];
    const lastUsable = last !== undefined && checkEntry(key, last, base) === undefined;
    const fallback = lastUsable ? 'last-good' : key === DEFAULT_ENTRY_KEY ? 'default' : 'skipped';
    issues.push({ configMap, key, severity: 'error', message: problem ?? 'invalid', fallback });
    return lastUsable ? last : undefined;
  };

  const defaultEntry = keys.includes(DEFAULT_ENTRY_KEY) ? accept(DEFAULT_ENTRY_KEY, BUILT_IN_SATURATION_THRESHOLDS) : undefined;
  if (defaultEntry) entries[DEFAULT_ENTRY_KEY] = defaultEntry;
  const base = defaultEntry ? merge(BUILT_IN_SATURATION_THRESHOLDS, defaultEntry) : { ...BUILT_IN_SATURATION_THRESHOLDS };

  const overrides: SaturationOverride[] = [];
  const owner = new Map<string, string>();
  for (const key of keys) {
    if (key === DEFAULT_ENTRY_KEY) continue;
    const entry = accept(key, base);
    if (!entry || entry.model_id === undefined || entry.namespace === undefined) continue;
    const target = `${entry.model_id}|${entry.namespace}`;
    const first = owner.get(target);
    if (first !== undefined) {
      issues.push({
        configMap,
        key,
        severity: 'error',
        message: `model_id ${entry.model_id} in namespace ${entry.namespace} is already overridden by key ${first}`,
        fallback: 'skipped',
      });
      continue;
    }
    owner.set(target, key);
    entries[key] = entry;
    overrides.push({ key, modelID: entry.model_id, namespace: entry.namespace, thresholds: merge(base, entry) });
  }

  return {
    config: { default: base, defaultSource: defaultEntry ? 'configmap' : 'built-in', entries, overrides },
    issues,
  };
}

/** The thresholds for one model in one namespace: its override merged over `default`, else `default`. */
export function saturationThresholdsFor(
  config: SaturationConfigSet,
  modelID: string,
  namespace: string,
): { thresholds: SaturationThresholds; overrideKey?: string } {
  const o = config.overrides.find((x) => x.modelID === modelID && x.namespace === namespace);
  return o ? { thresholds: o.thresholds, overrideKey: o.key } : { thresholds: config.default };
}
