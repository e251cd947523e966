/**
 * The controller's own ServiceMonitor (seed 003 §4): its deletion only warns, because without it
 * Prometheus stops scraping wva_desired_replicas and HPA/KEDA go blind. No VA is reconciled.
 * The key carries the ServiceMonitor's uid (`@service-monitor/<uid>`), so a deletion seen twice (the
 * finalizer's update, then the delete) is one warning, and a recreated object is told apart.
 */
import { z } from 'zod';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { apiVersionOf, objectPath, Resources } from '../../kube/resources.js';
import type { HandlerContext } from '../../runtime/function.js';
import { autoscalerNames } from './config/names.js';
import { FUNCTION_NAME, SERVICE_MONITOR_KEY, stateKeys } from './keys.js';

export const SERVICE_MONITOR_DELETED = 'ServiceMonitorDeleted';
const WARNED_TTL_SECONDS = 24 * 3600;

const serviceMonitorSchema = z.object({ metadata: z.object({ uid: z.string().optional(), deletionTimestamp: z.string().optional() }) });

export function serviceMonitorKey(uid: string | undefined): string {
  return `${SERVICE_MONITOR_KEY}/${uid ?? 'unknown'}`;
}

export function uidOfServiceMonitorKey(key: string): string | undefined {
  return key.startsWith(`${SERVICE_MONITOR_KEY}/`) ? key.slice(SERVICE_MONITOR_KEY.length + 1) : undefined;
}

/**
 * Whether the ServiceMonitor the key names is going away, given the one that exists now (if any).
 * One already replaced by a new object (another uid, not being deleted) is not: Prometheus scrapes
 * the replacement, and "Recreate the ServiceMonitor" would be wrong (issue 14 scenario 10).
 */
export function serviceMonitorGoing(uid: string, current: { uid?: string | undefined; deletionTimestamp?: string | undefined } | undefined): boolean {
  if (current === undefined) return true;
  if (current.deletionTimestamp !== undefined) return uid === 'unknown' || current.uid === uid;
  return false;
}

export async function checkServiceMonitor(key: string, ctx: HandlerContext): Promise<void> {
  const uid = uidOfServiceMonitorKey(key) ?? 'unknown';
  const { namespace, serviceMonitor: name } = autoscalerNames(ctx.env).names;
  let current: z.infer<typeof serviceMonitorSchema> | undefined;
  try {
    current = serviceMonitorSchema.parse(await kubeRequest(ctx.kc, objectPath(Resources.serviceMonitor, namespace, name)));
  } catch (err) {
    // 404: deleted, or its CRD is gone with it; either way Prometheus no longer scrapes us.
    if (!isStatus(err, 404)) throw err;
  }
  if (!serviceMonitorGoing(uid, current?.metadata)) return;
  // Marked after the Event is queued: a failed emit is retried, and one key runs on one worker at a time.
  const warned = stateKeys(ctx.prefix).serviceMonitorWarned(uid);
  if ((await ctx.redis.exists(warned)) === 1) return;
  const message =
    `ServiceMonitor ${namespace}/${name} is being deleted: Prometheus stops scraping the autoscaler's metrics, ` +
    'so HPA and KEDA can no longer read wva_desired_replicas. Recreate the ServiceMonitor.';
  ctx.log.warn({ serviceMonitor: `${namespace}/${name}`, uid }, message);
  await ctx.events.emit({
    involvedObject: { apiVersion: apiVersionOf(Resources.serviceMonitor), kind: Resources.serviceMonitor.kind, namespace, name, ...(uid !== 'unknown' ? { uid } : {}) },
    type: 'Warning',
    reason: SERVICE_MONITOR_DELETED,
    message,
    source: FUNCTION_NAME,
  });
  await ctx.redis.set(warned, '1', 'EX', WARNED_TTL_SECONDS);
}
