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
import type { AutoscalerNames } from './config/names.js';
import { parseSaturationConfig } from './config/saturation-config.js';
import { parseScaleToZeroConfig } from './config/scale-to-zero-config.js';
import { initialConfig, readStoredConfigText, type StoredConfig } from './config/stored.js';
import { prometheusSecretsOf, storableControllerConfig, type PrometheusSecrets } from './config/stored-secrets.js';
import { runScript } from '../../queue/run-script.js';
import { FUNCTION_NAME, stateKeys } from './keys.js';

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

function versionOf(cm: ConfigMap | undefined): string {
  return cm ? `${cm.metadata.uid ?? ''}/${cm.metadata.resourceVersion ?? ''}` : ABSENT;
}

export interface ConfigRefresh {
  config: StoredConfig;
  /** Which ConfigMaps were parsed again because they changed. */
  reparsed: Array<'controller' | 'saturation' | 'scaleToZero'>;
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
export async function refreshConfig(ctx: HandlerContext, names: AutoscalerNames): Promise<ConfigRefresh> {
  const key = stateKeys(ctx.prefix).config;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const text = await ctx.redis.get(key);
    const planned = await planRefresh(ctx, names, text);
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

async function planRefresh(ctx: HandlerContext, names: AutoscalerNames, text: string | null): Promise<PlannedRefresh> {
  const { config: stored, heldSecrets } = readStoredConfigText(text);
  const previous = stored ?? initialConfig(ctx.now());
  const [controllerCm, saturationCm, scaleToZeroCm] = await Promise.all([
    readConfigMap(ctx, names.namespace, names.controllerConfigMap),
    readConfigMap(ctx, names.namespace, names.saturationConfigMap),
    readConfigMap(ctx, names.namespace, names.scaleToZeroConfigMap),
  ]);
  const versions = { controller: versionOf(controllerCm), saturation: versionOf(saturationCm), scaleToZero: versionOf(scaleToZeroCm) };
  const prometheusSecrets = prometheusSecretsOf(controllerCm?.data);
  const issues: Array<{ issue: ConfigIssue; cm: ConfigMap | undefined }> = [];
  const reports: PlannedRefresh['reports'] = [];
  const reparsed: ConfigRefresh['reparsed'] = [];
  const next: StoredConfig = { ...previous, versions, refreshedAt: previous.refreshedAt };

  // Last good values only come from a stored configuration: a first parse has none to keep.
  if (!stored || stored.versions.controller !== versions.controller) {
    const r = parseControllerConfig(controllerCm?.data, stored?.controller, names.controllerConfigMap);
    next.controller = storableControllerConfig(r.config);
    reparsed.push('controller');
    for (const issue of r.issues) issues.push({ issue, cm: controllerCm });
    if (r.ignoredKeys.length > 0) reports.push(async () => ctx.log.info({ configMap: names.controllerConfigMap, keys: r.ignoredKeys }, 'ConfigMap keys this version does not read'));
    if (r.keysWithoutEffect.length > 0) reports.push(() => reportKeysWithoutEffect(ctx, names, r.keysWithoutEffect, controllerCm));
  }
  if (!stored || stored.versions.saturation !== versions.saturation) {
    const r = parseSaturationConfig(saturationCm?.data, stored?.saturation, names.saturationConfigMap);
    next.saturation = r.config;
    reparsed.push('saturation');
    for (const issue of r.issues) issues.push({ issue, cm: saturationCm });
  }
  if (!stored || stored.versions.scaleToZero !== versions.scaleToZero) {
    const r = parseScaleToZeroConfig(scaleToZeroCm?.data, stored?.scaleToZero, names.scaleToZeroConfigMap);
    next.scaleToZero = r.config;
    reparsed.push('scaleToZero');
    for (const issue of r.issues) issues.push({ issue, cm: scaleToZeroCm });
  }
  if (reparsed.length === 0) {
    // A record an older Ripple stored with secrets in it is written again without them.
    return { result: { config: previous, reparsed, issues: [], prometheusSecrets }, ...(heldSecrets ? { store: JSON.stringify(previous) } : {}), reports };
  }

  next.refreshedAt = ctx.now().toISOString();
  for (const { issue, cm } of issues) reports.push(() => reportIssue(ctx, names, issue, cm));
  return { result: { config: next, reparsed, issues: issues.map((i) => i.issue), prometheusSecrets }, store: JSON.stringify(next), reports };
}

/**
 * WVA's shipped ConfigMap sets the metrics-cache keys: not an error (so no Warning on every install
 * that copies it), but the operator is told they do nothing, once per ConfigMap change.
 */
async function reportKeysWithoutEffect(ctx: HandlerContext, names: AutoscalerNames, keys: string[], cm: ConfigMap | undefined): Promise<void> {
  const message = `${names.controllerConfigMap}: ${keys.join(', ')} have no effect (as in WVA v0.5.0): each cycle queries Prometheus once per model, so there is no cache; freshness uses PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD and _UNAVAILABLE_THRESHOLD only`;
  ctx.log.info({ configMap: names.controllerConfigMap, keys }, message);
  try {
    await ctx.events.emit({
      involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', namespace: names.namespace, name: names.controllerConfigMap, ...(cm?.metadata.uid !== undefined ? { uid: cm.metadata.uid } : {}) },
      type: 'Normal',
      reason: 'KeysWithoutEffect',
      message,
      source: FUNCTION_NAME,
    });
  } catch (err) {
    ctx.log.warn({ err: String(err) }, 'could not queue the configuration Event');
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
        namespace: names.namespace,
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
