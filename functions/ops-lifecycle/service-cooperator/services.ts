import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { kubeRequest } from '../../../kube/raw.js';
import { collectionPath, Resources } from '../../../kube/resources.js';
import { ENDPOINT_SLICE, endpointSliceSchema, podEndpointsOf } from '../pod-access/endpoint-slices.js';
import { SERVICE_COOPERATION_SELECTOR, type CooperatingService } from './plan.js';

/** The label the EndpointSlice controller puts on every slice it manages for a Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

const serviceListSchema = z.object({
  items: z.array(
    z
      .object({
        metadata: z.object({ name: z.string() }).passthrough(),
        spec: z.object({ selector: z.record(z.string(), z.string()).nullish() }).passthrough().optional(),
      })
      .passthrough(),
  ),
});

/** The namespace's Services labelled for cooperation (one LIST, server-side filtered by the label). */
export async function listCooperatingServices(kc: KubeConfig, namespace: string): Promise<CooperatingService[]> {
  const list = serviceListSchema.parse(await kubeRequest(kc, collectionPath(Resources.service, namespace), { query: { labelSelector: SERVICE_COOPERATION_SELECTOR } }));
  return list.items.map((s) => ({ name: s.metadata.name, selector: s.spec?.selector ?? {} }));
}

const sliceListSchema = z.object({
  items: z.array(
    endpointSliceSchema.and(z.object({ metadata: z.object({ labels: z.record(z.string(), z.string()).optional() }).passthrough() })),
  ),
});

/**
 * The Services (by name) whose EndpointSlices still route to this Pod: an endpoint for it (same name, and same
 * uid when the slice records one) that is ready or whose readiness is unknown. One LIST of the namespace's slices,
 * made only when a Service's finalizer is about to be released.
 */
export async function servicesRoutingTo(kc: KubeConfig, namespace: string, pod: { name: string; uid?: string }): Promise<Set<string>> {
  const list = sliceListSchema.parse(await kubeRequest(kc, collectionPath(ENDPOINT_SLICE, namespace), { query: { labelSelector: SERVICE_NAME_LABEL } }));
  const out = new Set<string>();
  for (const slice of list.items) {
    const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
    if (service === undefined) continue;
    const routes = podEndpointsOf(slice).some(
      (e) => e.podName === pod.name && (e.podUid === undefined || pod.uid === undefined || e.podUid === pod.uid) && e.ready !== false,
    );
    if (routes) out.add(service);
  }
  return out;
}
