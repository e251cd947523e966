/**
 * The PromQL WVA runs against Prometheus, as pure builders. Label values are escaped, so a model
 * name with a quote or backslash cannot change the query.
 */
import { formatPrometheusDuration } from '../config/duration.js';

export const VLLM_KV_CACHE_USAGE = 'vllm:kv_cache_usage_perc';
export const VLLM_REQUESTS_WAITING = 'vllm:num_requests_waiting';
export const VLLM_REQUEST_SUCCESS_TOTAL = 'vllm:request_success_total';

/**
 * Peaks over this window catch saturation between scrapes. It is the freshness limit
 * (PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD, 1m by default, WVA's window): a pod with no sample in it
 * has no fresh metrics.
 */
export const SATURATION_WINDOW_MS = 60_000;

export interface ModelSelector {
  namespace: string;
  modelID: string;
}

/** A PromQL double-quoted string literal. */
export function promqlString(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

function selector(metric: string, m: ModelSelector): string {
  return `${metric}{namespace=${promqlString(m.namespace)},model_name=${promqlString(m.modelID)}}`;
}

/** Peak KV-cache use (0..1) per pod over the window (the last minute by default). */
export function kvCacheUsageQuery(m: ModelSelector, windowMs = SATURATION_WINDOW_MS): string {
  return `max by (pod) (max_over_time(${selector(VLLM_KV_CACHE_USAGE, m)}[${formatPrometheusDuration(windowMs)}]))`;
}

/** Peak number of waiting requests per pod over the window (the last minute by default). */
export function queueLengthQuery(m: ModelSelector, windowMs = SATURATION_WINDOW_MS): string {
  return `max by (pod) (max_over_time(${selector(VLLM_REQUESTS_WAITING, m)}[${formatPrometheusDuration(windowMs)}]))`;
}

/**
 * Pods with any sample over the window (PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD): those of
 * them missing from the saturation queries have stale metrics.
 */
export function recentPodsQuery(m: ModelSelector, windowMs: number): string {
  const w = formatPrometheusDuration(windowMs);
  return `count by (pod) (count_over_time(${selector(VLLM_KV_CACHE_USAGE, m)}[${w}])) or count by (pod) (count_over_time(${selector(VLLM_REQUESTS_WAITING, m)}[${w}]))`;
}

/** Successful requests of the model over the scale-to-zero retention period. */
export function requestCountQuery(m: ModelSelector, retentionMs: number): string {
  return `sum(increase(${selector(VLLM_REQUEST_SUCCESS_TOTAL, m)}[${formatPrometheusDuration(retentionMs)}]))`;
}

/**
 * The inference gateway's endpoint picker (EPP) queues requests it cannot place yet in its flow-control
 * layer. Current EPPs export the gauge as `llm_d_epp_flow_control_queue_size`; older ones (the name WVA
 * v0.5.0 reads) as `inference_extension_flow_control_queue_size`. The model label is
 * `target_model_name`; WVA v0.5.1 also accepts `model_name` on series without a target model, and so
 * does this.
 */
export const EPP_FLOW_CONTROL_QUEUE_SIZE = 'llm_d_epp_flow_control_queue_size';
export const LEGACY_EPP_FLOW_CONTROL_QUEUE_SIZE = 'inference_extension_flow_control_queue_size';

/**
 * Requests of the model waiting in the gateway, summed over its EPPs (and their fairness and
 * priority bands). The EPP runs in the namespace of its InferencePool, which is that of the pods it
 * serves, so `namespace` is the model's. No series at all: no EPP is scraped for the model.
 *
 * Per EPP the current name wins: `current or legacy` keeps a legacy series only where no current
 * series has the same labels (PromQL's set union ignores the metric name), so an EPP exporting both
 * during an upgrade is counted once, an EPP still on the old name is counted, and a current 0 is not
 * overruled by a legacy value (upstream's fallback, llm-d-autoscaling 3300e6f).
 */
export function pendingRequestsQuery(m: ModelSelector): string {
  const ns = `namespace=${promqlString(m.namespace)}`;
  const model = promqlString(m.modelID);
  const either = (matchers: string) => `${EPP_FLOW_CONTROL_QUEUE_SIZE}{${matchers}} or ${LEGACY_EPP_FLOW_CONTROL_QUEUE_SIZE}{${matchers}}`;
  return `sum(${either(`${ns},target_model_name=${model}`)}) or sum(${either(`${ns},model_name=${model},target_model_name=""`)})`;
}

export const VLLM_CACHE_CONFIG_INFO = 'vllm:cache_config_info';

/**
 * Each pod's KV-cache size for Saturation V2: vLLM's info metric carries it as labels (`num_gpu_blocks`,
 * `block_size`) and no `model_name`, so it is selected by namespace and joined to the model's pods by name.
 */
export function cacheConfigQuery(namespace: string, windowMs: number): string {
  return `max by (pod, num_gpu_blocks, block_size) (max_over_time(${VLLM_CACHE_CONFIG_INFO}{namespace=${promqlString(namespace)}}[${formatPrometheusDuration(windowMs)}]))`;
}

export interface ModelQueries {
  kvCacheUsage: string;
  queueLength: string;
  /** Only when the unavailable threshold is longer than the fresh one (there is room for "stale"). */
  recentPods?: string;
  /** Only when scale-to-zero is enabled for the model. */
  requestCount?: string;
  /** Only when scale-to-zero is enabled: requests waiting in the gateway keep the model from going to zero. */
  pendingRequests?: string;
  /** Only for a model analysed by Saturation V2: each pod's KV-cache size. */
  cacheConfig?: string;
}

export function modelQueries(
  m: ModelSelector,
  scaleToZero: { enabled: boolean; retentionMs: number },
  freshness: { freshThresholdMs: number; unavailableThresholdMs: number } = { freshThresholdMs: SATURATION_WINDOW_MS, unavailableThresholdMs: SATURATION_WINDOW_MS },
  v2 = false,
): ModelQueries {
  return {
    kvCacheUsage: kvCacheUsageQuery(m, freshness.freshThresholdMs),
    queueLength: queueLengthQuery(m, freshness.freshThresholdMs),
    ...(freshness.unavailableThresholdMs > freshness.freshThresholdMs ? { recentPods: recentPodsQuery(m, freshness.unavailableThresholdMs) } : {}),
    ...(scaleToZero.enabled ? { requestCount: requestCountQuery(m, scaleToZero.retentionMs), pendingRequests: pendingRequestsQuery(m) } : {}),
    ...(v2 ? { cacheConfig: cacheConfigQuery(m.namespace, Math.max(freshness.unavailableThresholdMs, freshness.freshThresholdMs)) } : {}),
  };
}
