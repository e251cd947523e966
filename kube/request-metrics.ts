import type { KubeConfig } from '@kubernetes/client-node';
import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * client-go's REST client metrics, for the requests kube/raw.ts sends: the API server is the bound the
 * docs size Ripple against (docs/operations.md, "Sizing"), so its request rate, error codes and latency
 * are what a dashboard shows first. Names, labels and buckets are client-go's (k8s.io/client-go/tools/metrics,
 * as registered by component-base): `rest_client_requests_total{code,method,host}` and
 * `rest_client_request_duration_seconds{verb,host}`. A request that got no answer (connection refused, reset,
 * timed out) is counted with code `<error>`, as client-go does. The duration runs until the answer has been read
 * whole (client-go stops at the headers; Ripple reads small bodies, so the two differ little).
 *
 * Kept per KubeConfig (the process's one), like kube/connection-pool.ts keeps its pool: a process turns it on
 * once with `instrumentKubeRequests`, and a KubeConfig nobody instrumented (a test's, a CLI client's) costs nothing.
 */
const DURATION_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

interface RequestMetrics {
  requests: Counter<'code' | 'method' | 'host'>;
  duration: Histogram<'verb' | 'host'>;
}
const instrumented = new WeakMap<KubeConfig, RequestMetrics>();

/** Counts and times every kube/raw.ts request made with `kc`, into `registry`. Call once per registry. */
export function instrumentKubeRequests(kc: KubeConfig, registry: Registry): void {
  const registers = [registry];
  instrumented.set(kc, {
    requests: new Counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests, partitioned by status code, method, and host.',
      labelNames: ['code', 'method', 'host'],
      registers,
    }),
    duration: new Histogram({
      name: 'rest_client_request_duration_seconds',
      help: 'Request latency in seconds. Broken down by verb, and host.',
      labelNames: ['verb', 'host'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
  });
}

/**
 * Sends a request through `exchange` and records it: the one call kube/raw.ts makes. The answer or the error
 * passes through unchanged.
 */
export async function observedKubeRequest<A extends { status: number }>(kc: KubeConfig, method: string, url: URL, exchange: () => Promise<A>): Promise<A> {
  const m = instrumented.get(kc);
  if (!m) return exchange();
  const started = performance.now();
  let code = '<error>';
  try {
    const answer = await exchange();
    code = String(answer.status);
    return answer;
  } finally {
    m.requests.inc({ code, method, host: url.host });
    m.duration.observe({ verb: method, host: url.host }, (performance.now() - started) / 1000);
  }
}
