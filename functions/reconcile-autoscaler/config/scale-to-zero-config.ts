/**
 * The scale-to-zero ConfigMap (`model-scale-to-zero-config`): whether a model may be scaled to zero
 * replicas after a retention period without requests. Keys are `default` or any name; values are
 * YAML `{model_id, namespace?, enable_scale_to_zero, retention_period}`.
 *
 * Precedence for one model: its entry for the namespace > its entry without namespace > `default` >
 * the controller ConfigMap's `WVA_SCALE_TO_ZERO` > off. The retention period defaults to 10 minutes.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseGoDuration } from './duration.js';
import type { ConfigIssue } from './issues.js';
import { DEFAULT_SCALE_TO_ZERO_CONFIG_MAP } from './names.js';

export const DEFAULT_RETENTION_MS = 10 * 60_000;

const retention = z.string({ error: 'retention_period must be a duration string such as "10m"' }).transform((s, ctx) => {
  const ms = parseGoDuration(s.trim());
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({ code: 'custom', message: `retention_period ${JSON.stringify(s)} must be a positive duration such as "10m"` });
    return z.NEVER;
  }
  return ms;
});

export const scaleToZeroEntrySchema = z.object({
  model_id: z.string({ error: 'model_id must be a string' }).min(1, { error: 'model_id must not be empty' }).optional(),
  namespace: z.string({ error: 'namespace must be a string' }).min(1).optional(),
  enable_scale_to_zero: z.boolean({ error: 'enable_scale_to_zero must be true or false' }).optional(),
  retention_period: retention.optional(),
});

export interface ScaleToZeroEntry {
  modelID?: string;
  namespace?: string;
  enabled?: boolean;
  retentionMs?: number;
}

export interface ScaleToZeroConfigSet {
  default?: ScaleToZeroEntry;
  /** Accepted entries by key: the "last good" values for the next parse. */
  entries: Readonly<Record<string, ScaleToZeroEntry>>;
}

export const EMPTY_SCALE_TO_ZERO_CONFIG: ScaleToZeroConfigSet = { entries: {} };

function readEntry(key: string, text: string): { ok: true; entry: ScaleToZeroEntry } | { ok: false; message: string } {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    return { ok: false, message: `not valid YAML: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}` };
  }
  if (doc === null || doc === undefined) doc = {};
  const r = scaleToZeroEntrySchema.safeParse(doc);
  if (!r.success) return { ok: false, message: r.error.issues.map((i) => i.message).join('; ') };
  if (key !== 'default' && r.data.model_id === undefined) return { ok: false, message: 'an entry other than default must name model_id' };
  const e = r.data;
  return {
    ok: true,
    entry: Object.fromEntries(
      Object.entries({ modelID: e.model_id, namespace: e.namespace, enabled: e.enable_scale_to_zero, retentionMs: e.retention_period }).filter(([, v]) => v !== undefined),
    ) as ScaleToZeroEntry,
  };
}

export function parseScaleToZeroConfig(
  data: Readonly<Record<string, string | undefined>> | undefined,
  previous?: ScaleToZeroConfigSet,
  configMap: string = DEFAULT_SCALE_TO_ZERO_CONFIG_MAP,
): { config: ScaleToZeroConfigSet; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  const entries: Record<string, ScaleToZeroEntry> = {};
  const owner = new Map<string, string>();
  for (const key of Object.keys(data ?? {}).sort()) {
    const read = readEntry(key, data?.[key] ?? '');
    let entry: ScaleToZeroEntry | undefined;
    if (read.ok) entry = read.entry;
    else {
      entry = previous?.entries[key];
      issues.push({ configMap, key, severity: 'error', message: read.message, fallback: entry ? 'last-good' : 'skipped' });
    }
    if (!entry) continue;
    if (key !== 'default') {
      const target = `${entry.modelID ?? ''}|${entry.namespace ?? ''}`;
      const first = owner.get(target);
      if (first !== undefined) {
        issues.push({ configMap, key, severity: 'error', message: `model_id ${entry.modelID ?? ''} is already configured by key ${first}`, fallback: 'skipped' });
        continue;
      }
      owner.set(target, key);
    }
    entries[key] = entry;
  }
  const def = entries['default'];
  return { config: def ? { default: def, entries } : { entries }, issues };
}

export interface ScaleToZeroPolicy {
  enabled: boolean;
  retentionMs: number;
}

/** The scale-to-zero policy for one model; `controllerDefault` is the controller ConfigMap's WVA_SCALE_TO_ZERO. */
export function scaleToZeroPolicyFor(config: ScaleToZeroConfigSet, modelID: string, namespace: string, controllerDefault: boolean): ScaleToZeroPolicy {
  const list = Object.values(config.entries);
  const exact = list.find((e) => e.modelID === modelID && e.namespace === namespace);
  const anyNs = list.find((e) => e.modelID === modelID && e.namespace === undefined);
  const chain = [exact, anyNs, config.default];
  const enabled = chain.find((e) => e?.enabled !== undefined)?.enabled ?? controllerDefault;
  const retentionMs = chain.find((e) => e?.retentionMs !== undefined)?.retentionMs ?? DEFAULT_RETENTION_MS;
  return { enabled, retentionMs };
}
