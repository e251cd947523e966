import type { AdmissionDecision, AdmissionRequest } from './admission-review.js';

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>;
}

export interface RuleWithOperations {
  operations: Array<'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT' | '*'>;
  apiGroups: string[];
  apiVersions: string[];
  /** e.g. `pods`, `pods/status` */
  resources: string[];
  scope?: 'Namespaced' | 'Cluster' | '*';
}

/**
 * A mutating admission webhook as a function: what the API server sends it (rules, selectors), how the API
 * server treats its failures, and the decision (pure unless it declares `NoneOnDryRun`). The runtime serves it
 * at `/<path>`: `ripple webhook` over HTTPS with its own certificate, registered by URL with the CA bundle;
 * `ripple webhook --function` over HTTPS from mounted files or plain HTTP behind a platform's TLS, registered by
 * the manifests (the API server itself only calls webhooks over HTTPS).
 */
export interface AdmissionWebhookDefinition {
  /** The webhook's name in the configuration: a fully qualified name, e.g. `pod-gate.ops-lifecycle.ripple.dev`. */
  name: string;
  /** URL path it is served at, without the leading slash. */
  path: string;
  rules: RuleWithOperations[];
  objectSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  /** Fail: the write is refused while the webhook is unreachable. Ignore: it goes through unmutated. */
  failurePolicy: 'Fail' | 'Ignore';
  /** 1–30 s; the API server gives up after it (and applies failurePolicy). */
  timeoutSeconds: number;
  reinvocationPolicy?: 'Never' | 'IfNeeded';
  /**
   * The decision. Pure for every webhook with `sideEffects: None` (no I/O, so it answers within the timeout and
   * is the same on every replica); one that writes (`NoneOnDryRun`) must write nothing for a dry-run request.
   */
  admit(request: AdmissionRequest, now: Date): AdmissionDecision | Promise<AdmissionDecision>;
  /** None (default): the webhook only computes. NoneOnDryRun: it writes, except for dry-run requests. */
  sideEffects?: 'None' | 'NoneOnDryRun';
}
