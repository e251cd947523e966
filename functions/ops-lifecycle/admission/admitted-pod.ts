import { z } from 'zod';
import { objectMetaSchema } from '../../../kube/object.js';
import { toConditionStatus, type PodState } from '../protocol/index.js';

/**
 * The slice of a Pod in an AdmissionReview that the webhooks read. Not pod-access's lifecyclePodSchema: a Pod
 * being created may have no name yet (generateName), and a review is read leniently (null lists as empty).
 */
export const admittedPodSchema = z
  .object({
    metadata: objectMetaSchema.partial({ name: true }),
    spec: z.object({ readinessGates: z.array(z.object({ conditionType: z.string() }).passthrough()).nullish() }).passthrough().nullish(),
    status: z.object({ conditions: z.array(z.object({ type: z.string(), status: z.string() }).passthrough()).nullish() }).passthrough().nullish(),
  })
  .passthrough();
export type AdmittedPod = z.infer<typeof admittedPodSchema>;

/** The protocol's view of a Pod, its metadata from `meta`, its conditions from `status` and gates from `spec`. */
export function admittedPodState(meta: AdmittedPod, status: AdmittedPod = meta, spec: AdmittedPod = meta): PodState {
  return {
    labels: meta.metadata.labels ?? {},
    annotations: meta.metadata.annotations ?? {},
    finalizers: meta.metadata.finalizers ?? [],
    conditions: (status.status?.conditions ?? []).map((c) => ({ type: c.type, status: toConditionStatus(c.status) })),
    readinessGates: (spec.spec?.readinessGates ?? []).map((g) => g.conditionType),
    deleting: meta.metadata.deletionTimestamp !== undefined,
  };
}
