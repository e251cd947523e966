/**
 * One model group's inputs for a cycle: WVA's queries run against Prometheus, the answers parsed and
 * joined with the pods each variant owns. Never throws: a failure becomes the group's error, which
 * the engine turns into "hold the last decision" and the VA's status into PrometheusError.
 */
import { redactUrl } from '../../../base/redact.js';
import type { ScaleToZeroPolicy } from '../config/scale-to-zero-config.js';
import { parseInstantVector, parseSingleValue, valuesByPod } from '../queries/prometheus-response.js';
import { modelQueries, pendingRequestsQuery, type ModelSelector } from '../queries/promql.js';
import { joinReplicaMetrics } from '../queries/replica-metrics.js';
import type { ModelGroup } from '../saturation/active-variants.js';
import type { RequestCount } from '../saturation/enforcer.js';
import type { PendingRequests } from '../saturation/from-zero.js';
import type { GroupInputs } from '../saturation/engine.js';
import { categorizePrometheusError } from '../metrics/operator-metrics.js';
import { collectedQueryTypes } from '../metrics/cycle-observations.js';
import { PrometheusAuthError, type PrometheusClient } from './client.js';

export async function collectGroupInputs(
  prometheus: PrometheusClient | { unavailable: string },
  group: ModelGroup,
  podVariant: ReadonlyMap<string, string>,
  scaleToZero: ScaleToZeroPolicy,
  freshness?: { freshThresholdMs: number; unavailableThresholdMs: number },
  /** The model is analysed by Saturation V2: its pods' KV-cache sizes are read too. */
  v2 = false,
): Promise<GroupInputs> {
  if ('unavailable' in prometheus) return { metrics: { status: 'error', message: prometheus.unavailable } };
  const q = modelQueries({ namespace: group.namespace, modelID: group.modelID }, scaleToZero, freshness, v2);
  const started = performance.now();
  const queryTypes = collectedQueryTypes(q.requestCount !== undefined);
  const timed = (errorReason?: string) => ({ seconds: (performance.now() - started) / 1000, queryTypes, ...(errorReason !== undefined ? { errorReason } : {}) });
  try {
    const [kvBody, queueBody, recentBody, countBody, pendingBody, cacheBody] = await Promise.all([
      prometheus.query(q.kvCacheUsage),
      prometheus.query(q.queueLength),
      q.recentPods !== undefined ? prometheus.query(q.recentPods) : Promise.resolve(undefined),
      q.requestCount !== undefined ? prometheus.query(q.requestCount) : Promise.resolve(undefined),
      q.pendingRequests !== undefined ? prometheus.query(q.pendingRequests) : Promise.resolve(undefined),
      q.cacheConfig !== undefined ? prometheus.query(q.cacheConfig) : Promise.resolve(undefined),
    ]);
    const collection = timed();
    const kv = parseInstantVector(kvBody);
    if (!kv.ok) return { metrics: { status: 'error', message: `KV-cache query: ${kv.error}` }, collection: timed(categorizePrometheusError(kv.error)) };
    const queue = parseInstantVector(queueBody);
    if (!queue.ok) return { metrics: { status: 'error', message: `queue query: ${queue.error}` }, collection: timed(categorizePrometheusError(queue.error)) };
    const cache = q.cacheConfig !== undefined ? cacheConfigByPod(cacheBody) : new Map<string, { numGpuBlocks: number; blockSize: number }>();
    const replicas = joinReplicaMetrics(valuesByPod(kv.samples), valuesByPod(queue.samples), podVariant).map((r) => {
      const c = cache.get(r.podName);
      return c ? { ...r, ...c } : r;
    });
    // Pods of a variant with samples within the unavailable threshold but none within the fresh one.
    const fresh = new Set(replicas.map((r) => r.podName));
    const recent = q.recentPods !== undefined ? parseInstantVector(recentBody) : undefined;
    if (recent !== undefined && !recent.ok) return { metrics: { status: 'error', message: `recent-pods query: ${recent.error}` }, collection: timed(categorizePrometheusError(recent.error)) };
    const stale = [...valuesByPod(recent?.samples ?? []).keys()]
      .filter((pod) => !fresh.has(pod))
      .sort()
      .flatMap((pod) => {
        const variantName = podVariant.get(pod);
        return variantName === undefined ? [] : [{ podName: pod, variantName }];
      });
    let requestCount: RequestCount | undefined;
    if (q.requestCount !== undefined) {
      const c = parseSingleValue(countBody);
      requestCount = c.ok ? { status: 'ok', count: c.value } : { status: 'error', message: c.error };
    }
    const pending = q.pendingRequests !== undefined ? pendingFrom(pendingBody) : undefined;
    return {
      metrics: { status: 'ok', replicas, ...(stale.length > 0 ? { stale } : {}) },
      ...(requestCount !== undefined ? { requestCount } : {}),
      ...(pending?.status === 'ok' ? { pendingRequests: pending.pending } : {}),
      collection,
    };
  } catch (err) {
    // The message becomes MetricsAvailable's and a Warning Event's: no URL credentials, whatever threw.
    const message = redactUrl(err instanceof Error ? err.message : String(err));
    return {
      metrics: { status: 'error', message, ...(err instanceof PrometheusAuthError ? { auth: true } : {}) },
      collection: timed(err instanceof PrometheusAuthError ? 'unauthorized' : categorizePrometheusError(message)),
    };
  }
}

/** Pod → KV-cache size from `vllm:cache_config_info`'s labels; an unreadable answer is no sizes (V2 then falls back to V1). */
function cacheConfigByPod(body: unknown): Map<string, { numGpuBlocks: number; blockSize: number }> {
  const out = new Map<string, { numGpuBlocks: number; blockSize: number }>();
  const v = parseInstantVector(body);
  if (!v.ok) return out;
  for (const s of v.samples) {
    const pod = s.labels['pod'] || s.labels['pod_name'];
    const numGpuBlocks = Number(s.labels['num_gpu_blocks']);
    const blockSize = Number(s.labels['block_size']);
    if (pod && Number.isInteger(numGpuBlocks) && numGpuBlocks > 0 && Number.isInteger(blockSize) && blockSize > 0) out.set(pod, { numGpuBlocks, blockSize });
  }
  return out;
}

function pendingFrom(body: unknown): PendingRequests {
  const v = parseInstantVector(body);
  if (!v.ok) return { status: 'error', message: v.error };
  const finite = v.samples.filter((s) => Number.isFinite(s.value));
  return finite.length === 0 ? { status: 'none' } : { status: 'ok', pending: finite.reduce((a, s) => a + s.value, 0) };
}

/** Requests waiting in the inference gateway for one model at zero (scale from zero). Never throws. */
export async function collectPendingRequests(prometheus: PrometheusClient | { unavailable: string }, model: ModelSelector): Promise<PendingRequests> {
  if ('unavailable' in prometheus) return { status: 'error', message: prometheus.unavailable };
  try {
    return pendingFrom(await prometheus.query(pendingRequestsQuery(model)));
  } catch (err) {
    return { status: 'error', message: redactUrl(err instanceof Error ? err.message : String(err)) };
  }
}
