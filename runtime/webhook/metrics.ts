import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * What the admission webhooks answered, for the webhook pods' /metrics (docs/operations.md, "Metrics"). The API
 * server keeps its own side (`apiserver_admission_webhook_*`), but a managed control plane rarely lets it be
 * scraped, and it cannot tell a refusal GraceDelete meant from one the webhook failed into; so the webhook counts
 * its own verdicts.
 *
 * - `ripple_admission_reviews_total{webhook,operation,result}`: one per review. `result` is `allowed` (nothing
 *   changed), `patched` (allowed with a JSON patch), `denied` (refused, e.g. GraceDelete's 403), `error` (admit
 *   threw: answered 500, so the API server applied the webhook's failurePolicy), `unauthorized` (no or a wrong
 *   function token: 401) or `malformed` (not an AdmissionReview: 400). `operation` is the review's (CREATE,
 *   UPDATE, DELETE), empty for the last two, whose body is never read.
 * - `ripple_admission_review_duration_seconds{webhook,operation}`: from the request to the answer; the API server
 *   gives up at the webhook's timeoutSeconds (5 s, 10 s for GraceDelete), so the buckets end there.
 * - `ripple_admission_reviews_in_flight{webhook}`: reviews being answered now.
 *
 * `webhook` is the webhook's name in the registration (e.g. `pod-readiness-gate.ops-lifecycle.ripple.dev`), as the
 * API server's own metrics and its refusal messages name it.
 */
export type AdmissionResult = 'allowed' | 'patched' | 'denied' | 'error' | 'unauthorized' | 'malformed';

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class AdmissionMetrics {
  private readonly reviews: Counter<'webhook' | 'operation' | 'result'>;
  private readonly duration: Histogram<'webhook' | 'operation'>;
  private readonly inFlight: Gauge<'webhook'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.reviews = new Counter({
      name: 'ripple_admission_reviews_total',
      help: 'Admission reviews answered, by webhook, operation and result (allowed, patched, denied, error, unauthorized, malformed).',
      labelNames: ['webhook', 'operation', 'result'],
      registers,
    });
    this.duration = new Histogram({
      name: 'ripple_admission_review_duration_seconds',
      help: 'Time from an admission review arriving to its answer, by webhook and operation.',
      labelNames: ['webhook', 'operation'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.inFlight = new Gauge({ name: 'ripple_admission_reviews_in_flight', help: 'Admission reviews being answered now, by webhook.', labelNames: ['webhook'], registers });
  }

  /** Starts timing one review of `webhook`; the returned function records how it ended. */
  begin(webhook: string): (operation: string, result: AdmissionResult) => void {
    const started = performance.now();
    this.inFlight.inc({ webhook });
    return (operation, result) => {
      this.inFlight.dec({ webhook });
      this.reviews.inc({ webhook, operation, result });
      this.duration.observe({ webhook, operation }, (performance.now() - started) / 1000);
    };
  }
}
