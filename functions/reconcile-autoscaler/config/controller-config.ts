/**
 * The controller ConfigMap (`workload-variant-autoscaler-variantautoscaling-config`): Prometheus
 * connection, `GLOBAL_OPT_INTERVAL`, feature flags and the metrics freshness limits. Every value is a
 * string; each known key is parsed with zod. A key that is absent or empty takes its default; a key
 * that cannot be parsed is reported and keeps its last good value.
 */
import type { z } from 'zod';
import { redactUrl } from '../../../base/redact.js';
import { DEFAULT_CONTROLLER_CONFIG_MAP } from './names.js';
import type { ConfigIssue } from './issues.js';
import { booleanText, durationText, httpUrlText, plainText } from './values.js';

export interface PrometheusSettings {
  /** Base URL of Prometheus's HTTP API; without it the autoscaler cannot collect metrics. */
  baseUrl?: string;
  tlsInsecureSkipVerify: boolean;
  caCertPath?: string;
  clientCertPath?: string;
  clientKeyPath?: string;
  serverName?: string;
  /** Takes precedence over tokenPath. Never logged. */
  bearerToken?: string;
  tokenPath?: string;
}

/**
 * How old a pod's newest sample may be (WVA's freshness rule): younger than `freshThresholdMs` it is
 * used (the saturation queries look this far back); younger than `unavailableThresholdMs` the pod's
 * metrics are stale (`MetricsStale`, the last decision held); older, the pod counts as not reporting.
 */
export interface MetricsFreshnessSettings {
  freshThresholdMs: number;
  unavailableThresholdMs: number;
}

export interface ControllerConfig {
  prometheus: PrometheusSettings;
  /** How often the saturation engine runs (the resync tick of this function). */
  globalOptIntervalMs: number;
  /** Controller-wide scale-to-zero default, below the scale-to-zero ConfigMap's entries. */
  scaleToZero: boolean;
  limitedMode: boolean;
  nodeSelector?: string;
  eppMetricReaderBearerToken?: string;
  metricsFreshness: MetricsFreshnessSettings;
}

export const DEFAULT_GLOBAL_OPT_INTERVAL_MS = 60_000;

export const DEFAULT_CONTROLLER_CONFIG: ControllerConfig = {
  prometheus: { tlsInsecureSkipVerify: false },
  globalOptIntervalMs: DEFAULT_GLOBAL_OPT_INTERVAL_MS,
  scaleToZero: false,
  limitedMode: false,
  metricsFreshness: { freshThresholdMs: 60_000, unavailableThresholdMs: 300_000 },
};

/** Keys whose values are secrets: never echoed in issues. */
const SENSITIVE = new Set(['PROMETHEUS_BEARER_TOKEN', 'EPP_METRIC_READER_BEARER_TOKEN']);

export const CONTROLLER_CONFIG_KEYS = [
  'PROMETHEUS_BASE_URL',
  'PROMETHEUS_TLS_INSECURE_SKIP_VERIFY',
  'PROMETHEUS_CA_CERT_PATH',
  'PROMETHEUS_CLIENT_CERT_PATH',
  'PROMETHEUS_CLIENT_KEY_PATH',
  'PROMETHEUS_SERVER_NAME',
  'PROMETHEUS_BEARER_TOKEN',
  'PROMETHEUS_TOKEN_PATH',
  'GLOBAL_OPT_INTERVAL',
  'WVA_SCALE_TO_ZERO',
  'WVA_LIMITED_MODE',
  'WVA_NODE_SELECTOR',
  'EPP_METRIC_READER_BEARER_TOKEN',
  'PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD',
  'PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD',
] as const;
export type ControllerConfigKey = (typeof CONTROLLER_CONFIG_KEYS)[number];

/**
 * Keys of WVA's shipped ConfigMap that have no effect, in WVA v0.5.0 (its cache is never built from
 * them: the read is commented out in cmd/main.go, and its freshness rule ignores the stale
 * threshold) and in Ripple: each cycle asks Prometheus once per model, so there is nothing to
 * cache, and a pod is fresh, stale or unavailable by the other two thresholds. They are not parsed;
 * a ConfigMap that sets them is told so (a log line and a Normal Event naming them).
 */
export const KEYS_WITHOUT_EFFECT = [
  'PROMETHEUS_METRICS_CACHE_ENABLED',
  'PROMETHEUS_METRICS_CACHE_TTL',
  'PROMETHEUS_METRICS_CACHE_MAX_SIZE',
  'PROMETHEUS_METRICS_CACHE_CLEANUP_INTERVAL',
  'PROMETHEUS_METRICS_CACHE_FETCH_INTERVAL',
  'PROMETHEUS_METRICS_CACHE_STALE_THRESHOLD',
] as const;

export interface ParsedControllerConfig {
  config: ControllerConfig;
  issues: ConfigIssue[];
  /** Keys present in the ConfigMap that this version does not read. */
  ignoredKeys: string[];
  /** Keys of WVA's ConfigMap present here that have no effect (`KEYS_WITHOUT_EFFECT`). */
  keysWithoutEffect: string[];
}

type Data = Readonly<Record<string, string | undefined>>;

function reader(data: Data, configMap: string, issues: ConfigIssue[]) {
  return function read<T>(key: ControllerConfigKey, schema: z.ZodType<T, string>, fallback: T, previous: T | undefined, hasPrevious: boolean): T {
    const raw = data[key];
    if (raw === undefined || raw.trim() === '') return fallback;
    const r = schema.safeParse(raw);
    if (r.success) return r.data;
    // Issues go to logs and to Warning Events on the ConfigMap: no tokens, no URL credentials.
    const shown = SENSITIVE.has(key) ? 'value' : redactUrl(JSON.stringify(raw));
    issues.push({
      configMap,
      key,
      severity: 'error',
      message: `${shown} ${r.error.issues[0]?.message ?? 'is invalid'}`,
      fallback: hasPrevious ? 'last-good' : 'default',
    });
    return hasPrevious ? (previous as T) : fallback;
  };
}

/**
 * Parse the controller ConfigMap's data. Pass the previous result's config so an entry that became
 * unparsable keeps its last good value instead of snapping back to the default.
 */
export function parseControllerConfig(
  data: Data | undefined,
  previous?: ControllerConfig,
  configMap: string = DEFAULT_CONTROLLER_CONFIG_MAP,
): ParsedControllerConfig {
  const d = data ?? {};
  const issues: ConfigIssue[] = [];
  const read = reader(d, configMap, issues);
  const had = previous !== undefined;
  const D = DEFAULT_CONTROLLER_CONFIG;
  const P = previous;
  const pf = P?.metricsFreshness;

  const config: ControllerConfig = {
    prometheus: omitUndefined({
      baseUrl: read('PROMETHEUS_BASE_URL', httpUrlText, undefined, P?.prometheus.baseUrl, had),
      tlsInsecureSkipVerify: read('PROMETHEUS_TLS_INSECURE_SKIP_VERIFY', booleanText, D.prometheus.tlsInsecureSkipVerify, P?.prometheus.tlsInsecureSkipVerify, had),
      caCertPath: read('PROMETHEUS_CA_CERT_PATH', plainText, undefined, P?.prometheus.caCertPath, had),
      clientCertPath: read('PROMETHEUS_CLIENT_CERT_PATH', plainText, undefined, P?.prometheus.clientCertPath, had),
      clientKeyPath: read('PROMETHEUS_CLIENT_KEY_PATH', plainText, undefined, P?.prometheus.clientKeyPath, had),
      serverName: read('PROMETHEUS_SERVER_NAME', plainText, undefined, P?.prometheus.serverName, had),
      bearerToken: read('PROMETHEUS_BEARER_TOKEN', plainText, undefined, P?.prometheus.bearerToken, had),
      tokenPath: read('PROMETHEUS_TOKEN_PATH', plainText, undefined, P?.prometheus.tokenPath, had),
    }),
    globalOptIntervalMs: read('GLOBAL_OPT_INTERVAL', durationText(1_000), D.globalOptIntervalMs, P?.globalOptIntervalMs, had),
    scaleToZero: read('WVA_SCALE_TO_ZERO', booleanText, D.scaleToZero, P?.scaleToZero, had),
    limitedMode: read('WVA_LIMITED_MODE', booleanText, D.limitedMode, P?.limitedMode, had),
    ...omitUndefined({
      nodeSelector: read('WVA_NODE_SELECTOR', plainText, undefined, P?.nodeSelector, had),
      eppMetricReaderBearerToken: read('EPP_METRIC_READER_BEARER_TOKEN', plainText, undefined, P?.eppMetricReaderBearerToken, had),
    }),
    metricsFreshness: {
      freshThresholdMs: read('PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD', durationText(1_000), D.metricsFreshness.freshThresholdMs, pf?.freshThresholdMs, had),
      unavailableThresholdMs: read('PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD', durationText(1_000), D.metricsFreshness.unavailableThresholdMs, pf?.unavailableThresholdMs, had),
    },
  };
  const f = config.metricsFreshness;
  if (f.unavailableThresholdMs <= f.freshThresholdMs) {
    // No room for "stale": a pod whose metrics are not fresh is simply not reporting.
    issues.push({
      configMap,
      key: 'PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD',
      severity: 'warning',
      message: 'should be longer than PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD: no pod will be reported MetricsStale, metrics older than the fresh threshold count as missing',
      fallback: 'none',
    });
    config.metricsFreshness = { ...f, unavailableThresholdMs: f.freshThresholdMs };
  }
  const known = new Set<string>(CONTROLLER_CONFIG_KEYS);
  const withoutEffect = new Set<string>(KEYS_WITHOUT_EFFECT);
  const present = Object.keys(d).filter((k) => d[k] !== undefined);
  const ignoredKeys = present.filter((k) => !known.has(k) && !withoutEffect.has(k)).sort();
  const keysWithoutEffect = present.filter((k) => withoutEffect.has(k)).sort();
  return { config, issues, ignoredKeys, keysWithoutEffect };
}

/**
 * WVA reads Prometheus settings from the environment first: when `PROMETHEUS_BASE_URL` is set
 * there, every Prometheus key comes from the environment and the ConfigMap's are ignored.
 */
export function effectivePrometheusSettings(
  config: ControllerConfig,
  env: Readonly<Record<string, string | undefined>>,
): { settings: PrometheusSettings; source: 'env' | 'configmap'; issues: ConfigIssue[] } {
  if (env['PROMETHEUS_BASE_URL'] === undefined || env['PROMETHEUS_BASE_URL'].trim() === '') {
    return { settings: config.prometheus, source: 'configmap', issues: [] };
  }
  const subset: Record<string, string | undefined> = {};
  for (const key of CONTROLLER_CONFIG_KEYS) if (key.startsWith('PROMETHEUS_') && !key.includes('CACHE')) subset[key] = env[key];
  const parsed = parseControllerConfig(subset, undefined, 'environment');
  return { settings: parsed.config.prometheus, source: 'env', issues: parsed.issues };
}

function omitUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
