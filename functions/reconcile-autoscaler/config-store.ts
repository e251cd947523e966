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
import { randomBytes } from 'node:crypto';
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

const LOCK_TTL_MS = 30_000;
const LOCK_WAIT_MS = 35_000;
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * `@config` and `@optimize` are different keys, so they can run at once on two workers; both may
 * re-parse a ConfigMap that moved. The parse and its store happen under a lock in Redis, so the one
 * that comes second finds the stored versions current: no lost update, and one Warning per bad
 * entry, not two (issue 14 scenario 9).
 */
export async function refreshConfig(ctx: HandlerContext, names: AutoscalerNames): Promise<ConfigRefresh> {
  const lockKey = `${stateKeys(ctx.prefix).config}:lock`;
  const token = randomBytes(8).toString('hex');
  const deadline = Date.now() + LOCK_WAIT_MS;
  while ((await ctx.redis.set(lockKey, token, 'PX', LOCK_TTL_MS, 'NX')) !== 'OK') {
    if (Date.now() > deadline) throw new Error('the autoscaler configuration lock is held for too long; retrying');
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    return await refreshConfigLocked(ctx, names);
  } finally {
    await runScript(ctx.redis, RELEASE_LUA, [lockKey], [token]).catch((err: unknown) => ctx.log.warn({ err: String(err) }, 'could not release the configuration lock (it expires by itself)'));
  }
}

async function refreshConfigLocked(ctx: HandlerContext, names: AutoscalerNames): Promise<ConfigRefresh> {
  const { config: stored, heldSecrets } = readStoredConfigText(await ctx.redis.get(stateKeys(ctx.prefix).config));
  const previous = stored ?? initialConfig(ctx.now());
  const [controllerCm, saturationCm, scaleToZeroCm] = await Promise.all([
    readConfigMap(ctx, names.namespace, names.controllerConfigMap),
    readConfigMap(ctx, names.namespace, names.saturationConfigMap),
    readConfigMap(ctx, names.namespace, names.scaleToZeroConfigMap),
  ]);
  const versions = { controller: versionOf(controllerCm), saturation: versionOf(saturationCm), scaleToZero: versionOf(scaleToZeroCm) };
  const prometheusSecrets = prometheusSecretsOf(controllerCm?.data);
  const issues: Array<{ issue: ConfigIssue; cm: ConfigMap | undefined }> = [];
  const reparsed: ConfigRefresh['reparsed'] = [];
  const next: StoredConfig = { ...previous, versions, refreshedAt: previous.refreshedAt };

  // Last good values only come from a stored configuration: a first parse has none to keep.
  if (!stored || stored.versions.controller !== versions.controller) {
    const r = parseControllerConfig(controllerCm?.data, stored?.controller, names.controllerConfigMap);
    next.controller = storableControllerConfig(r.config);
    reparsed.push('controller');
    for (const issue of r.issues) issues.push({ issue, cm: controllerCm });
    if (r.ignoredKeys.length > 0) ctx.log.info({ configMap: names.controllerConfigMap, keys: r.ignoredKeys }, 'ConfigMap keys this version does not read');
    if (r.keysWithoutEffect.length > 0) await reportKeysWithoutEffect(ctx, names, r.keysWithoutEffect, controllerCm);
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
    if (heldSecrets) await ctx.redis.set(stateKeys(ctx.prefix).config, JSON.stringify(previous));
    return { config: previous, reparsed, issues: [], prometheusSecrets };
  }

  next.refreshedAt = ctx.now().toISOString();
  await ctx.redis.set(stateKeys(ctx.prefix).config, JSON.stringify(next));
  ctx.log.info(
    { reparsed, intervalMs: next.controller.globalOptIntervalMs, saturationDefault: next.saturation.default, overrides: next.saturation.overrides.map((o) => o.key) },
    'autoscaler configuration refreshed',
  );
  for (const { issue, cm } of issues) await reportIssue(ctx, names, issue, cm);
  return { config: next, reparsed, issues: issues.map((i) => i.issue), prometheusSecrets };
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
