import { z } from 'zod';
import { objectMetaSchema } from '../../../kube/object.js';
import { toConditionStatus, type PodState } from '../protocol/index.js';

/**
 * The part of a Pod the lifecycle reads, parsed at the API boundary. Everything else is kept as it came
 * (passthrough) because nothing here rewrites a whole Pod: writes are patches of the fields planned.
 */
export const lifecyclePodSchema = z
  .object({
    apiVersion: z.string().optional(),
    kind: z.string().optional(),
    metadata: objectMetaSchema,
    spec: z
      .object({ readinessGates: z.array(z.object({ conditionType: z.string() }).passthrough()).optional() })
      .passthrough()
      .optional(),
    status: z
      .object({ conditions: z.array(z.object({ type: z.string(), status: z.string() }).passthrough()).optional() })
      .passthrough()
      .optional(),
  })
  .passthrough();
export type LifecyclePod = z.infer<typeof lifecyclePodSchema>;

/** Which Pod: its namespace and name, and optionally the uid of the instance meant (names are reused). */
export interface PodRef {
  namespace: string;
  name: string;
  uid?: string;
}

/** The protocol's plain view of a fetched Pod. */
export function podStateOf(pod: LifecyclePod): PodState {
  return {
    labels: { ...(pod.metadata.labels ?? {}) },
    annotations: { ...(pod.metadata.annotations ?? {}) },
    finalizers: [...(pod.metadata.finalizers ?? [])],
    conditions: (pod.status?.conditions ?? []).map((c) => ({ type: c.type, status: toConditionStatus(c.status) })),
    readinessGates: (pod.spec?.readinessGates ?? []).map((g) => g.conditionType),
    deleting: pod.metadata.deletionTimestamp !== undefined,
  };
}

export function refOf(pod: LifecyclePod): PodRef {
  return { namespace: pod.metadata.namespace ?? '', name: pod.metadata.name, uid: pod.metadata.uid };
}

/** The uid of the Pod's controlling owner (ownerReferences with controller: true), if any. */
export function controllerUidOf(pod: Pick<LifecyclePod, 'metadata'>): string | undefined {
  return pod.metadata.ownerReferences?.find((o) => o.controller === true)?.uid;
}
