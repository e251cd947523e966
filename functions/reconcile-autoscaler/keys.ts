/**
 * The function's name, its special queue keys and its Redis keys.
 *
 * Besides VA keys (`namespace/name`) the queue carries three keys of its own. They start with `@`,
 * which no Kubernetes name can, and contain no `:` (BullMQ job ids are `key#n` and reject it).
 * Because they share the keyed queue, each runs on one worker at a time across every process.
 */
export const FUNCTION_NAME = 'reconcile-autoscaler';

/** The optimization cycle: the resync tick enqueues this instead of every VA (see `resyncKeys`). */
export const OPTIMIZE_KEY = '@optimize';
/** A watched ConfigMap changed: refresh the configuration in Redis, reconcile no VA. */
export const CONFIG_KEY = '@config';
/** The controller's ServiceMonitor is going away: warn (seed 003); reconcile no VA. */
export const SERVICE_MONITOR_KEY = '@service-monitor';

export function isSpecialKey(key: string): boolean {
  return key.startsWith('@');
}

/**
 * The key of a variant found on an annotated HPA or ScaledObject (discovery/annotations.ts):
 * `namespace/name@Kind`. No Kubernetes name contains `@`, so it never collides with a VA's key, and
 * the queue never carries it (such a variant has no object of Ripple's to reconcile: the cycle
 * publishes its series itself).
 */
export function annotatedVariantKey(namespace: string, name: string, kind: string): string {
  return `${namespace}/${name}@${kind}`;
}

export function isAnnotatedKey(key: string): boolean {
  return !isSpecialKey(key) && key.includes('@');
}

/** The variant's own name in a key: the VA's, or the HPA's / ScaledObject's. */
export function variantNameOfKey(key: string): string {
  const name = key.slice(key.indexOf('/') + 1);
  const at = name.indexOf('@');
  return at < 0 ? name : name.slice(0, at);
}

/** Redis keys, all under the host's prefix so tests and installs never share state. */
export function stateKeys(prefix: string) {
  // A Redis Cluster hash tag: the per-VA hashes are written together (MULTI, the sweep's script), so one slot.
  const base = `${prefix}:{${FUNCTION_NAME}}`;
  return {
    /** JSON: the parsed ConfigMaps (last good values) and the resourceVersions they came from. */
    config: `${base}:config`,
    /** Hash VA key → the latest cycle's decision (JSON), read by that VA's reconcile on any worker. */
    decisions: `${base}:decisions`,
    /** Hash VA key → why the latest cycle left the VA out (JSON); such a VA publishes nothing. */
    inactive: `${base}:inactive`,
    /** Set for a while once a VA asked for a cycle for a Deployment (by uid), so asking never loops. */
    cycleRequested: (vaKey: string, targetUid: string) => `${base}:cycle-requested:${vaKey}:${targetUid}`,
    /** Hash VA key → the values behind its exported gauges (JSON), read by /metrics on any process. */
    series: `${base}:series`,
    /** JSON: what the last cycle saw and decided per model, for operators and tests. */
    lastCycle: `${base}:last-cycle`,
    /** JSON: the operator gauges the last cycle computed (metrics/operator-metrics.ts), replaced whole by each cycle. */
    operatorGauges: `${base}:operator-gauges`,
    /** Hash counter/histogram field (metric + labels as JSON) → integer total, added to by each cycle. */
    counters: `${base}:counters`,
    /** Set once per ServiceMonitor deletion (by uid), so one deletion is one warning. */
    serviceMonitorWarned: (uid: string) => `${base}:service-monitor-warned:${uid}`,
  };
}
