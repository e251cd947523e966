import { describe, expect, it } from 'vitest';
import { kvCacheUsageQuery, modelQueries, pendingRequestsQuery, promqlString, queueLengthQuery, recentPodsQuery, requestCountQuery } from './promql.js';

const m = { namespace: 'llm-d-sim', modelID: 'default/default' };

describe('PromQL builders', () => {
  it('builds WVA’s saturation queries', () => {
    expect(kvCacheUsageQuery(m)).toBe('max by (pod) (max_over_time(vllm:kv_cache_usage_perc{namespace="llm-d-sim",model_name="default/default"}[1m]))');
    expect(queueLengthQuery(m)).toBe('max by (pod) (max_over_time(vllm:num_requests_waiting{namespace="llm-d-sim",model_name="default/default"}[1m]))');
  });

  it('builds the scale-to-zero request count over the retention period', () => {
    expect(requestCountQuery(m, 600_000)).toBe('sum(increase(vllm:request_success_total{namespace="llm-d-sim",model_name="default/default"}[10m]))');
    expect(requestCountQuery(m, 5_400_000)).toContain('[1h30m]');
  });

  it('adds the request count only when scale-to-zero is enabled', () => {
    expect(modelQueries(m, { enabled: false, retentionMs: 600_000 }).requestCount).toBeUndefined();
    expect(modelQueries(m, { enabled: true, retentionMs: 900_000 }).requestCount).toContain('[15m]');
  });

  it('builds the gateway queue query of scale from zero: target_model_name (WVA v0.5.0), else model_name (v0.5.1)', () => {
    expect(pendingRequestsQuery(m)).toBe(
      'sum(llm_d_epp_flow_control_queue_size{namespace="llm-d-sim",target_model_name="default/default"} or ' +
        'inference_extension_flow_control_queue_size{namespace="llm-d-sim",target_model_name="default/default"}) or ' +
        'sum(llm_d_epp_flow_control_queue_size{namespace="llm-d-sim",model_name="default/default",target_model_name=""} or ' +
        'inference_extension_flow_control_queue_size{namespace="llm-d-sim",model_name="default/default",target_model_name=""})',
    );
    expect(modelQueries(m, { enabled: false, retentionMs: 600_000 }).pendingRequests).toBeUndefined();
    expect(modelQueries(m, { enabled: true, retentionMs: 600_000 }).pendingRequests).toBe(pendingRequestsQuery(m));
  });

  it('the saturation window is the fresh threshold; pods seen within the unavailable one are asked for when it is longer', () => {
    const q = modelQueries(m, { enabled: false, retentionMs: 600_000 }, { freshThresholdMs: 5_000, unavailableThresholdMs: 20_000 });
    expect(q.kvCacheUsage).toContain('[5s]');
    expect(q.queueLength).toContain('[5s]');
    expect(q.recentPods).toBe(recentPodsQuery(m, 20_000));
    expect(recentPodsQuery(m, 300_000)).toBe(
      'count by (pod) (count_over_time(vllm:kv_cache_usage_perc{namespace="llm-d-sim",model_name="default/default"}[5m])) or ' +
        'count by (pod) (count_over_time(vllm:num_requests_waiting{namespace="llm-d-sim",model_name="default/default"}[5m]))',
    );
    expect(modelQueries(m, { enabled: false, retentionMs: 600_000 }, { freshThresholdMs: 60_000, unavailableThresholdMs: 60_000 }).recentPods).toBeUndefined();
  });

  it('escapes label values so they cannot change the query', () => {
    expect(promqlString('a"b\\c\nd')).toBe('"a\\"b\\\\c\\nd"');
    expect(kvCacheUsageQuery({ namespace: 'ns', modelID: 'x"}) or vector(1) #' })).toBe(
      'max by (pod) (max_over_time(vllm:kv_cache_usage_perc{namespace="ns",model_name="x\\"}) or vector(1) #"}[1m]))',
    );
  });
});
