import { CONTROL_LABEL, CONTROL_LABEL_VALUE, withServiceReadyGate } from '../protocol/index.js';

/** The slice of a Pod (or a Pod template) withLifecycle touches; V1Pod and V1PodTemplateSpec both fit. */
export interface PodShape {
  metadata?: { labels?: Record<string, string> };
  spec?: { readinessGates?: Array<{ conditionType: string }> };
}

/**
 * A copy of a Pod (or Pod template) its owner is about to create, enrolled in PodOpsLifecycle: labelled
 * `kusionstack.io/control=true` and with the readiness gate `pod.kusionstack.io/service-ready`. The gate must be
 * there at creation — spec.readinessGates cannot be changed afterwards — which is why the creator adds it rather
 * than the lifecycle function. Idempotent; the input is not modified.
 */
export function withLifecycle<T extends PodShape>(pod: T): T {
  const labels = { ...(pod.metadata?.labels ?? {}), [CONTROL_LABEL]: CONTROL_LABEL_VALUE };
  const readinessGates = withServiceReadyGate(pod.spec?.readinessGates);
  // The spread keeps every field of T; TypeScript cannot see that replacing two optional members preserves T.
  return { ...pod, metadata: { ...pod.metadata, labels }, spec: { ...pod.spec, readinessGates } } as T;
}
