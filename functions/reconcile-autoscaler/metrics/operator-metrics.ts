/**
 * The wva_* metrics operators graph on a current WVA (llm-d-autoscaling's internal/metrics/metrics.go,
 * internal/constants/metrics.go): their names, label names, and what one cycle adds to them, as plain
 * data. The cycle stores it in Redis (state.ts) and every process serves it at scrape time
 * (collector.ts), as it does the replica gauges.
 *
 * Two kinds: a snapshot of gauges each cycle replaces whole, and counters/histograms each cycle adds to.
 */
import { z } from 'zod';

export const OPERATOR_METRIC = {
  optimizationDuration: 'wva_optimization_duration_seconds',
  modelsProcessed: 'wva_models_processed',
  errors: 'wva_errors_total',
  decisionsLimited: 'wva_decisions_limited_total',
  enforcerModifications: 'wva_enforcer_modifications_total',
  configInfo: 'wva_config_info',
  configKvSpareThreshold: 'wva_config_kv_spare_threshold',
  configQueueSpareThreshold: 'wva_config_queue_spare_threshold',
  configOptimizationInterval: 'wva_config_optimization_interval_seconds',
  collectionDuration: 'wva_metrics_collection_duration_seconds',
  collectionErrors: 'wva_metrics_collection_errors_total',
  podsDiscovered: 'wva_metrics_pods_discovered',
  freshness: 'wva_metrics_freshness_status',
  utilization: 'wva_saturation_utilization',
  spareCapacity: 'wva_spare_capacity',
  requiredCapacity: 'wva_required_capacity',
  kvTokensUsed: 'wva_kv_cache_tokens_used',
  kvTokensCapacity: 'wva_kv_cache_tokens_capacity',
  saturationUp: 'wva_saturation_metrics_up',
} as const;

/** Upstream's bucket bounds (seconds). */
export const OPTIMIZATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
export const COLLECTION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;

export const HISTOGRAMS = {
  [OPERATOR_METRIC.optimizationDuration]: { help: 'Duration of optimization loop cycles in seconds', labelNames: ['status'], buckets: OPTIMIZATION_BUCKETS },
  [OPERATOR_METRIC.collectionDuration]: { help: 'Duration of metrics collection operations in seconds', labelNames: ['query_type'], buckets: COLLECTION_BUCKETS },
} as const;
export type HistogramName = keyof typeof HISTOGRAMS;

export const COUNTERS = {
  [OPERATOR_METRIC.errors]: { help: 'Total number of errors by component', labelNames: ['component', 'error_type'] },
  [OPERATOR_METRIC.decisionsLimited]: { help: 'Total number of decisions limited by the limiter', labelNames: ['variant_name', 'namespace', 'limiter_name'] },
  [OPERATOR_METRIC.enforcerModifications]: { help: 'Total number of decision modifications made by the enforcer', labelNames: ['policy_type'] },
  [OPERATOR_METRIC.collectionErrors]: { help: 'Total number of metrics collection errors', labelNames: ['query_type', 'reason'] },
} as const;
export type CounterName = keyof typeof COUNTERS;

/** Upstream's component names (internal/constants/constants.go) and the error types Ripple counts. */
export const COMPONENT = { collector: 'collector', enforcer: 'enforcer', limiter: 'limiter', controller: 'controller' } as const;
export const ERROR_TYPE = {
  replicaMetrics: 'Failed to collect replica metrics',
  /** Upstream's exact words (pipeline/enforcer.go). */
  requestCount: 'Failed to get request count, keeping current decisions',
  pendingRequests: 'Failed to read the inference gateway queue',
  cycle: 'Optimization cycle failed',
} as const;
export const QUERY_TYPE = { kvCache: 'kv_cache', queueLength: 'queue_length', requestCount: 'request_count', cacheConfig: 'cache_config' } as const;
export const POLICY_TYPE = { 'scale-to-zero': 'scale_to_zero', 'minimum-replica': 'minimum_replicas' } as const;
/** Ripple's only limiter: WVA v0.5.0's GPU limiter over the node inventory. */
export const GPU_LIMITER_NAME = 'gpu-limiter';
/** `wva_required_capacity` / `wva_spare_capacity`'s `unit` label: V1 publishes a 0/1 scale-up signal and a fraction. */
export const UNIT = { binary: 'binary', fraction: '', continuous: 'continuous' } as const;

/**
 * Upstream's bounded categories of a Prometheus error (CategorizePrometheusError), for the `reason`
 * label; Node's socket error codes are mapped onto the same words.
 */
export function categorizePrometheusError(message: string): string {
  const m = message.toLowerCase();
  if (m.includes('connection refused') || m.includes('econnrefused')) return 'connection_refused';
  if (m.includes('no such host') || m.includes('enotfound') || m.includes('eai_again')) return 'dns_error';
  if (m.includes('timeout') || m.includes('no answer within') || m.includes('etimedout')) return 'timeout';
  if (m.includes('parse error')) return 'parse_error';
  if (m.includes('bad_data')) return 'bad_data';
  if (m.includes('execution')) return 'execution_error';
  if (m.includes('query processing')) return 'query_processing';
  return 'unknown';
}

/** A counter field in Redis: the metric and its labels (sorted), as JSON. */
export function counterField(name: string, labels: Readonly<Record<string, string>>): string {
  return JSON.stringify([name, Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))]);
}
export const counterFieldSchema = z.tuple([z.string(), z.record(z.string(), z.string())]);

export interface Increment {
  field: string;
  by: number;
}

/**
 * What one observation adds to a histogram: each bucket it falls in, `+Inf`, the count, and the sum in
 * microseconds (Redis's HINCRBY counts integers; the scrape divides).
 */
export function histogramIncrements(name: HistogramName, labels: Readonly<Record<string, string>>, seconds: number): Increment[] {
  const out: Increment[] = [];
  for (const le of HISTOGRAMS[name].buckets) if (seconds <= le) out.push({ field: counterField(`${name}_bucket`, { ...labels, le: String(le) }), by: 1 });
  out.push({ field: counterField(`${name}_bucket`, { ...labels, le: '+Inf' }), by: 1 });
  out.push({ field: counterField(`${name}_count`, labels), by: 1 });
  out.push({ field: counterField(`${name}_sum_us`, labels), by: Math.max(0, Math.round(seconds * 1e6)) });
  return out;
}

export function counterIncrement(name: CounterName, labels: Readonly<Record<string, string>>, by = 1): Increment {
  return { field: counterField(name, labels), by };
}

/** Same field twice in one cycle (two models failing alike): one increment. */
export function mergeIncrements(incs: readonly Increment[]): Increment[] {
  const m = new Map<string, number>();
  for (const i of incs) m.set(i.field, (m.get(i.field) ?? 0) + i.by);
  return [...m].map(([field, by]) => ({ field, by }));
}

/** The gauges a cycle replaces whole. Per-VA entries carry the VA key and target name: `variant_name` is chosen at scrape time. */
export const operatorGaugesSchema = z.object({
  modelsProcessed: z.number().int().min(0),
  config: z.object({
    analyzerName: z.string(),
    limiterEnabled: z.boolean(),
    scaleToZeroEnabled: z.boolean(),
    kvSpareTrigger: z.number(),
    queueSpareTrigger: z.number(),
    intervalSeconds: z.number(),
  }),
  podsDiscovered: z.record(z.string(), z.number().int().min(0)),
  variants: z.array(
    z.object({
      vaKey: z.string(),
      targetName: z.string(),
      namespace: z.string(),
      modelID: z.string(),
      accelerator: z.string(),
      /** Pods by freshness: fresh, stale, missing (listed but never seen within the unavailable threshold), unavailable (Prometheus failed). */
      freshness: z.record(z.string(), z.number().int().min(0)),
      /** Present when this cycle analysed the variant's saturation from fresh metrics. */
      saturation: z
        .object({
          utilization: z.number(),
          spare: z.number(),
          required: z.number(),
          unit: z.string(),
          kvTokensUsed: z.number().optional(),
          kvTokensCapacity: z.number().optional(),
        })
        .optional(),
      /** 1 when this cycle decided the variant from fresh metrics (wva_saturation_metrics_up). */
      up: z.boolean(),
    }),
  ),
});
export type OperatorGauges = z.infer<typeof operatorGaugesSchema>;
