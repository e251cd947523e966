import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { instrumentKubeRequests, observedKubeRequest } from './request-metrics.js';

// The recording alone; test/integration/monitoring.test.ts sees the counts of a real process's requests to
// the real API server.
describe('observedKubeRequest', () => {
  it("counts answers by code, failures as '<error>', and times both, only for an instrumented KubeConfig", async () => {
    const kc = new KubeConfig();
    const other = new KubeConfig();
    const registry = new Registry();
    instrumentKubeRequests(kc, registry);
    const url = new URL('https://10.0.0.1:6443/api/v1/pods');
    await expect(observedKubeRequest(kc, 'GET', url, async () => ({ status: 200 }))).resolves.toEqual({ status: 200 });
    await observedKubeRequest(kc, 'PATCH', url, async () => ({ status: 409 }));
    await expect(observedKubeRequest(kc, 'GET', url, () => Promise.reject(new Error('ECONNRESET')))).rejects.toThrow('ECONNRESET');
    await observedKubeRequest(other, 'GET', url, async () => ({ status: 200 }));
    const text = await registry.metrics();
    expect(text).toContain('rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443"} 1');
    expect(text).toContain('rest_client_requests_total{code="409",method="PATCH",host="10.0.0.1:6443"} 1');
    expect(text).toContain('rest_client_requests_total{code="<error>",method="GET",host="10.0.0.1:6443"} 1');
    expect(text).toContain('rest_client_request_duration_seconds_count{verb="GET",host="10.0.0.1:6443"} 2');
    expect(text).toContain('rest_client_request_duration_seconds_bucket{le="60",verb="PATCH",host="10.0.0.1:6443"} 1');
  });
});
