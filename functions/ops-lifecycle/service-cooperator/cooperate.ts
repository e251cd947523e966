import type { HandlerContext } from '../../../runtime/function.js';
import { patchPodMetadata } from '../pod-access/pod-api.js';
import { podStateOf, type LifecyclePod } from '../pod-access/pod.js';
import { isControlled } from '../protocol/index.js';
import { planServiceCooperation, SERVICE_FINALIZER_PREFIX } from './plan.js';
import { listCooperatingServices, servicesRoutingTo } from './services.js';

/**
 * The in-tree cooperation controller for plain Services (kuperator's ResourceConsist idea, with the Service's
 * EndpointSlices as its "load balancer"), one step for one Pod, run by the lifecycle's reconcile before it plans:
 * hold the Pod with one protection finalizer per labelled Service that selects it, and release each only once the
 * Pod is out of that Service's EndpointSlices. Returns the Pod as written (or as read when nothing changed).
 *
 * A Pod with no cooperating Service in its namespace and none of Ripple's Service finalizers costs one LIST of
 * labelled Services; the EndpointSlices are listed only when a finalizer is about to be released. The write is
 * preconditioned on the version read: a 409 propagates and the retry plans again.
 *
 * With cooperation turned off (`enabled` false, OPS_LIFECYCLE_SERVICE_COOPERATION not true) no Service is listed
 * and nothing new is held, but a Pod still holding Ripple's Service finalizers from when it was on is planned as
 * if no Service cooperated any more: each finalizer is released (once the Pod is out of the Service's endpoints
 * when it is being drained). Skipping such a Pod would strand its finalizers: operate never granted, a delete
 * that never ends.
 */
export async function cooperateWithServices(ctx: HandlerContext, pod: LifecyclePod, enabled = true): Promise<LifecyclePod> {
  const namespace = pod.metadata.namespace ?? '';
  const state = podStateOf(pod);
  const controlled = isControlled(state.labels);
  const holds = state.finalizers.some((f) => f.startsWith(SERVICE_FINALIZER_PREFIX));
  // A Pod that left the lifecycle (control label removed) is let go at once: no event of it reaches this function
  // any more (its watch is label-selected), so a finalizer held for its endpoints would never be released.
  const cooperating = controlled && enabled;
  if (!cooperating && !holds) return pod;
  const services = cooperating ? await listCooperatingServices(ctx.kc, namespace) : [];
  if (services.length === 0 && !holds) return pod;
  let plan = planServiceCooperation({ namespace, pod: state, services, ...(controlled ? {} : { routedBy: new Set<string>() }) });
  if (plan.needsRoutes) {
    const routedBy = await servicesRoutingTo(ctx.kc, namespace, { name: pod.metadata.name, uid: pod.metadata.uid });
    plan = planServiceCooperation({ namespace, pod: state, services, routedBy });
  }
  if (plan.heldBy.length > 0) ctx.log.info({ heldBy: plan.heldBy }, 'service cooperation holds the pod: still routed');
  if (!plan.changed) return pod;
  const written = await patchPodMetadata(ctx.kc, pod, { annotations: plan.annotations, finalizers: plan.finalizers });
  ctx.log.info({ finalizers: written.metadata.finalizers ?? [], heldBy: plan.heldBy }, 'service cooperation updated the pod');
  return written;
}
