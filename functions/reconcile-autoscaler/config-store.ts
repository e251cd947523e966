/**
 * The configuration held in Redis: refreshed from the ConfigMaps when one of them changes (the
 * `@config` key, seed 003 example 4) and checked at the start of every cycle, so a change missed while
 * no watcher led is picked up by the next tick. Each ConfigMap is parsed only when its uid or
 * resourceVersion moved; an unparsable entry is reported (log + Warning Event naming the key) and
 * its last good value kept.
 */
import { z } from 'zod';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import type { HandlerContext } from '../../runtime/function.js';
import { parseControllerConfig } from './config/controller-config.js';
import { describeIssue, type ConfigIssue } from './config/issues.js';
import { CONFIG_MAP_ROLES, preferredName, type AutoscalerNames, type ConfigMapRole } from './config/names.js';
import { parseSaturationConfig, type SaturationConfigSet } from './config/saturation-config.js';
import { parseScaleToZeroConfig } from './config/scale-to-zero-config.js';
import { initialConfig, readStoredConfigText, type StoredConfig } from './config/stored.js';
import { prometheusSecretsOf, storableControllerConfig, type PrometheusSecrets } from './config/stored-secrets.js';
import { runScript } from '../../queue/run-script.js';
import { FUNCTION_NAME, stateKeys } from './keys.js';
import { mapBounded } from './bounded.js';

const configMapSchema = z.object({
  metadata: z.object({ name: z.string(), namespace: z.string().optional(), uid: z.string().optional(), resourceVersion: z.string().optional() }),
  // Binary data is not read; values are strings by the API's definition.
  data: z.record(z.string(), z.string()).optional(),
});
type ConfigMap = z.infer<typeof configMapSchema>;

const ABSENT = 'absent';

async function readConfigMap(ctx: Pick<HandlerContext, 'kc'>, namespace: string, name: string): Promise<ConfigMap | undefined> {
  try {
    return configMapSchema.parse(await kubeRequest(ctx.kc, objectPath(Resources.configMap, namespace, name)));
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

function versionOf(cm: ConfigMap): string {
  return `${cm.metadata.name}=${cm.metadata.uid ?? ''}/${cm.metadata.resourceVersion ?? ''}`;
}

/** One role's ConfigMap as read now: the first of its names that exists, and those it shadows. */
interface Generation {
  role: ConfigMapRole;
  /** The ConfigMap read, or the preferred name when none exists (for messages). */
  name: string;
  cm: ConfigMap | undefined;
  /** Other names of the role that exist too and are not read (the older generation). */
  shadowed: ConfigMap[];
  /**
   * What was read: every existing candidate's `name=uid/resourceVersion`, or `absent`. A change of
   * any of them (the one read, or one it shadows) parses and reports again.
   */
  version: string;
}

async function readGeneration(ctx: Pick<HandlerContext, 'kc'>, names: AutoscalerNames, role: ConfigMapRole): Promise<Generation> {
  const found = (await Promise.all(names.configMaps[role].map((name) => readConfigMap(ctx, names.namespace, name)))).filter((cm): cm is ConfigMap => cm !== undefined);
  const [cm, ...shadowed] = found;
  return { role, name: cm?.metadata.name ?? preferredName(names, role), cm, shadowed, version: found.length === 0 ? ABSENT : found.map(versionOf).join(',') };
}

export interface ConfigRefresh {
  config: StoredConfig;
  /** Which ConfigMaps were parsed again because they changed. */
  reparsed: Array<'controller' | 'saturation' | 'scaleToZero' | `saturation@${string}`>;
  issues: ConfigIssue[];
  /** What `config` leaves out, from the controller ConfigMap as read now; never stored. */
  prometheusSecrets: PrometheusSecrets;
}

export async function readStoredConfig(ctx: Pick<HandlerContext, 'redis' | 'prefix'>): Promise<StoredConfig | undefined> {
  return readStoredConfigText(await ctx.redis.get(stateKeys(ctx.prefix).config)).config;
}

/** Store `next` only if the stored text is still `expected` ('' = absent): a compare-and-set. */
const CAS_LUA = `if (redis.call('GET', KEYS[1]) or '') == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`;
const MAX_ATTEMPTS = 5;

/**
 * `@config` and `@optimize` are different keys, so they can run at once on two workers; both may
 * re-parse a ConfigMap that moved. Each stores its result only if the stored configuration is still
 * the one it started from (compare-and-set in Redis); the one that comes second reads again, finds the
 * stored versions current and has nothing to do: no lost update, and one Warning per bad entry, not
 * two (issue 14 scenario 9). No lock, so nobody waits on a worker that died holding one.
 */
export async function refreshConfig(ctx: HandlerContext, names: AutoscalerNames, vaNamespaces?: readonly string[]): Promise<ConfigRefresh> {
  const key = stateKeys(ctx.prefix).config;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const text = await ctx.redis.get(key);
    const planned = await planRefresh(ctx, names, text, vaNamespaces);
    if (planned.store === undefined) return planned.result;
    if (Number(await runScript(ctx.redis, CAS_LUA, [key], [text ?? '', planned.store])) !== 1) continue;
    if (planned.result.reparsed.length > 0) {
      const next = planned.result.config;
      ctx.log.info(
        { reparsed: planned.result.reparsed, intervalMs: next.controller.globalOptIntervalMs, saturationDefault: next.saturation.default, overrides: next.saturation.overrides.map((o) => o.key) },
        'autoscaler configuration refreshed',
      );
    }
    for (const report of planned.reports) await report();
    return planned.result;
  }
  throw new Error('the autoscaler configuration kept changing while it was refreshed; retrying');
}

interface PlannedRefresh {
  result: ConfigRefresh;
  /** The text to store; undefined: the stored configuration is current. */
  store?: string;
  /** Issues to report once the store succeeded (so a refresh that lost the race reports nothing). */
  reports: Array<() => Promise<void>>;
}

/**
 * `vaNamespaces`: the namespaces that have VAs, whose namespace-local saturation ConfigMaps are read
 * (the cycle passes them); undefined keeps the namespace-local configurations as stored (`@config`).
 */
async function planRefresh(ctx: HandlerContext, names: AutoscalerNames, text: string | null, vaNamespaces: readonly string[] | undefined): Promise<PlannedRefresh> {
  const { config: stored, heldSecrets } = readStoredConfigText(text);
  const previous = stored ?? initialConfig(ctx.now());
  const [controller, saturation, scaleToZero] = await Promise.all([
    readGeneration(ctx, names, 'controller'),
    readGeneration(ctx, names, 'saturation'),
    readGeneration(ctx, names, 'scaleToZero'),
  ]);
  const chosen: Record<ConfigMapRole, Generation> = { controller, saturation, scaleToZero };
  const controllerCm = chosen.controller.cm;
  const saturationCm = chosen.saturation.cm;
  const scaleToZeroCm = chosen.scaleToZero.cm;
  const versions = { controller: chosen.controller.version, saturation: chosen.saturation.version, scaleToZero: chosen.scaleToZero.version };
  const prometheusSecrets = prometheusSecretsOf(controllerCm?.data);
  const issues: Array<{ issue: ConfigIssue; cm: ConfigMap | undefined }> = [];
  const reports: PlannedRefresh['reports'] = [];
  const reparsed: ConfigRefresh['reparsed'] = [];
  const next: StoredConfig = { ...previous, versions, refreshedAt: previous.refreshedAt };
  const controllerName = chosen.controller.name;
  for (const role of CONFIG_MAP_ROLES) {
    const g = chosen[role];
    if (g.shadowed.length > 0 && (!stored || stored.versions[role] !== g.version)) reports.push(() => reportShadowed(ctx, names, g));
  }

  // Last good values only come from a stored configuration: a first parse has none to keep.
  if (!stored || stored.versions.controller !== versions.controller) {
    const r = parseControllerConfig(controllerCm?.data, stored?.controller, controllerName);
    next.controller = storableControllerConfig(r.config);
    reparsed.push('controller');
    for (const issue of r.issues) issues.push({ issue, cm: controllerCm });
    if (r.ignoredKeys.length > 0) reports.push(async () => ctx.log.info({ configMap: controllerName, keys: r.ignoredKeys }, 'ConfigMap keys this version does not read'));
    if (r.keysWithoutEffect.length > 0) reports.push(() => reportKeysWithoutEffect(ctx, names, controllerName, r.keysWithoutEffect, controllerCm));
  }
  if (!stored || stored.versions.saturation !== versions.saturation) {
    const r = parseSaturationConfig(saturationCm?.data, stored?.saturation, chosen.saturation.name);
    next.saturation = r.config;
    reparsed.push('saturation');
    for (const issue of r.issues) issues.push({ issue, cm: saturationCm });
  }
  if (!stored || stored.versions.scaleToZero !== versions.scaleToZero) {
    const r = parseScaleToZeroConfig(scaleToZeroCm?.data, stored?.scaleToZero, chosen.scaleToZero.name);
    next.scaleToZero = r.config;
    reparsed.push('scaleToZero');
    for (const issue of r.issues) issues.push({ issue, cm: scaleToZeroCm });
  }
  if (vaNamespaces !== undefined) {
    const local = await planNamespaceSaturation(ctx, names, vaNamespaces, previous.namespaces ?? {});
    next.namespaces = local.namespaces;
    reparsed.push(...local.reparsed);
    issues.push(...local.issues);
  }
  if (reparsed.length === 0) {
    // A record an older Ripple stored with secrets in it is written again without them.
    return { result: { config: previous, reparsed, issues: [], prometheusSecrets }, ...(heldSecrets ? { store: JSON.stringify(previous) } : {}), reports };
  }

  next.refreshedAt = ctx.now().toISOString();
  for (const { issue, cm } of issues) reports.push(() => reportIssue(ctx, names, issue, cm));
  return { result: { config: next, reparsed, issues: issues.map((i) => i.issue), prometheusSecrets }, store: JSON.stringify(next), reports };
}

/** Namespace-local ConfigMaps read at once. */
const LOCAL_READ_CONCURRENCY = 4;

/**
 * Namespace-local saturation ConfigMaps, as WVA defines them since v0.5.1: a ConfigMap with the
 * saturation ConfigMap's (newer) name in a namespace that has VAs replaces, when it has at least one
 * usable entry, the controller namespace's saturation configuration for that namespace's models. Each
 * is parsed only when it moved (last good values kept, issues reported on it); namespaces without VAs
 * are dropped from the record.
 */
/** The namespace-local configurations that replace the controller namespace's: those with a usable entry. */
export function namespaceSaturation(config: StoredConfig): Record<string, SaturationConfigSet> {
  return Object.fromEntries(Object.entries(config.namespaces ?? {}).filter(([, l]) => Object.keys(l.saturation.entries).length > 0).map(([ns, l]) => [ns, l.saturation]));
}

async function planNamespaceSaturation(
  ctx: HandlerContext,
  names: AutoscalerNames,
  vaNamespaces: readonly string[],
  stored: NonNullable<StoredConfig['namespaces']>,
): Promise<{ namespaces: NonNullable<StoredConfig['namespaces']>; reparsed: Array<`saturation@${string}`>; issues: Array<{ issue: ConfigIssue; cm: ConfigMap | undefined }> }> {
  const name = preferredName(names, 'saturation');
  const local = [...new Set(vaNamespaces)].filter((ns) => ns !== names.namespace).sort();
  const read = await mapBounded(local, LOCAL_READ_CONCURRENCY, async (ns) => ({ ns, cm: await readConfigMap(ctx, ns, name) }));
  const namespaces: NonNullable<StoredConfig['namespaces']> = {};
  const reparsed: Array<`saturation@${string}`> = [];
  const issues: Array<{ issue: ConfigIssue; cm: ConfigMap | undefined }> = [];
  for (const { ns, cm } of read) {
    const before = stored[ns];
    const version = cm ? versionOf(cm) : ABSENT;
    if (before !== undefined && before.version === version) {
      namespaces[ns] = before;
      continue;
    }
    if (before !== undefined || cm !== undefined) reparsed.push(`saturation@${ns}`);
    if (!cm) continue;
    const r = parseSaturationConfig(cm.data, before?.saturation, name);
    for (const issue of r.issues) issues.push({ issue, cm });
    // Kept even without a usable entry, so it is not parsed (and reported) again each cycle;
    // `namespaceSaturation` leaves such a one out.
    namespaces[ns] = { version, saturation: r.config };
  }
  return { namespaces, reparsed, issues };
}

/**
 * WVA's shipped ConfigMap sets the metrics-cache keys: not an error (so no Warning on every install
 * that copies it), but the operator is told they do nothing, once per ConfigMap change.
 */
async function reportKeysWithoutEffect(ctx: HandlerContext, names: AutoscalerNames, configMap: string, keys: string[], cm: ConfigMap | undefined): Promise<void> {
  const message = `${configMap}: ${keys.join(', ')} have no effect (as in WVA v0.5.0): each cycle queries Prometheus once per model, so there is no cache; freshness uses PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD and _UNAVAILABLE_THRESHOLD only`;
  ctx.log.info({ configMap, keys }, message);
  try {
    await ctx.events.emit({
      involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', namespace: names.namespace, name: configMap, ...(cm?.metadata.uid !== undefined ? { uid: cm.metadata.uid } : {}) },
      type: 'Normal',
      reason: 'KeysWithoutEffect',
      message,
      source: FUNCTION_NAME,
    });
  } catch (err) {
    ctx.log.warn({ err: String(err) }, 'could not queue the configuration Event');
  }
}

/**
 * Both generations of one ConfigMap exist: the newer (`wva-*`, WVA v0.5.1) is read and the older one
 * ignored, which an operator editing the older one must be told. A Normal Event on the ignored
 * ConfigMap (that is where `kubectl describe` is run) and a log line, once per change of either.
 */
async function reportShadowed(ctx: HandlerContext, names: AutoscalerNames, g: Generation): Promise<void> {
  for (const old of g.shadowed) {
    const message = `${old.metadata.name} is not read: ${g.name} exists too and wins (WVA's name since v0.5.1); move its keys to ${g.name} or delete one of them`;
    ctx.log.info({ configMap: old.metadata.name, readInstead: g.name }, message);
    try {
      await ctx.events.emit({
        involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', namespace: names.namespace, name: old.metadata.name, ...(old.metadata.uid !== undefined ? { uid: old.metadata.uid } : {}) },
        type: 'Normal',
        reason: 'ConfigMapShadowed',
        message,
        source: FUNCTION_NAME,
      });
    } catch (err) {
      ctx.log.warn({ err: String(err) }, 'could not queue the configuration Event');
    }
  }
}

/** One bad entry: a log line and a Warning Event on the ConfigMap, both naming the key. */
async function reportIssue(ctx: HandlerContext, names: AutoscalerNames, issue: ConfigIssue, cm: ConfigMap | undefined): Promise<void> {
  const message = describeIssue(issue);
  ctx.log.warn({ configMap: issue.configMap, key: issue.key, fallback: issue.fallback }, message);
  try {
    await ctx.events.emit({
      involvedObject: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: cm?.metadata.namespace ?? names.namespace,
        name: issue.configMap,
        ...(cm?.metadata.uid !== undefined ? { uid: cm.metadata.uid } : {}),
      },
      type: 'Warning',
      reason: 'InvalidConfiguration',
      message,
      source: FUNCTION_NAME,
    });
  } catch (err) {
    // The configuration is applied either way; the Event is only the notice of it.
    ctx.log.warn({ err: String(err) }, 'could not queue the configuration Event');
  }
}
