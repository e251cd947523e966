import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { kubeRequest } from '../../../kube/raw.js';
import { collectionPath, type ResourceRef } from '../../../kube/resources.js';
import type { PodEndpoint } from '../protocol/index.js';

export const ENDPOINT_SLICE: ResourceRef = { group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', plural: 'endpointslices', namespaced: true };

/** The part of an EndpointSlice the lifecycle reads: which Pods its endpoints name, and whether they are ready. */
export const endpointSliceSchema = z
  .object({
    metadata: z.object({ name: z.string() }).passthrough(),
    endpoints: z
      .array(
        z
          .object({
            conditions: z.object({ ready: z.boolean().nullish(), serving: z.boolean().nullish() }).passthrough().nullish(),
            targetRef: z.object({ kind: z.string().optional(), name: z.string().optional(), uid: z.string().optional() }).passthrough().nullish(),
          })
          .passthrough(),
      )
      .nullish(),
  })
  .passthrough();
export type EndpointSliceSlice = z.infer<typeof endpointSliceSchema>;

/**
 * Every endpoint of the slice that names a Pod. It counts as not ready when either `ready` or `serving` is false:
 * a Service with `publishNotReadyAddresses` (the headless Services of ModelServing groups, StatefulSet peers)
 * keeps `ready` true whatever the Pod's state, and only `serving` tells that the EndpointSlice controller saw the
 * Pod not Ready; without this, a lifecycle would wait forever for such a slice. A terminating endpoint is
 * `ready: false` (load balancers stop sending it new connections) even while it is still serving.
 */
export function podEndpointsOf(slice: EndpointSliceSlice): PodEndpoint[] {
  return (slice.endpoints ?? []).flatMap((e) => {
    const ref = e.targetRef;
    if (ref?.kind !== 'Pod' || ref.name === undefined) return [];
    const c = e.conditions;
    const ready = c?.ready === false || c?.serving === false ? false : (c?.ready ?? undefined);
    return [{ slice: slice.metadata.name, podName: ref.name, ...(ref.uid ? { podUid: ref.uid } : {}), ...(ready === null || ready === undefined ? {} : { ready }) }];
  });
}

const sliceListSchema = z.object({ items: z.array(endpointSliceSchema) });

/**
 * The endpoints naming this Pod in every EndpointSlice of its namespace (any Service, and slices made by other
 * controllers). One LIST, made only while an ID waits in preparing (needsTrafficCheck).
 */
export async function listPodEndpoints(kc: KubeConfig, namespace: string, podName: string): Promise<PodEndpoint[]> {
  const list = sliceListSchema.parse(await kubeRequest(kc, collectionPath(ENDPOINT_SLICE, namespace)));
  return list.items.flatMap(podEndpointsOf).filter((e) => e.podName === podName);
}
