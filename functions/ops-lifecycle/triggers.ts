import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { KubeObject } from '../../kube/object.js';
import { Resources } from '../../kube/resources.js';
import type { Mapper } from '../../runtime/function.js';
import type { Predicate } from '../../watcher/predicates.js';
import { storeKey } from '../../watcher/store.js';
import { endpointSliceSchema, podEndpointsOf } from './pod-access/endpoint-slices.js';
import { controllerUidOf, lifecyclePodSchema, podStateOf } from './pod-access/pod.js';
import { SERVICE_COOPERATION_LABEL, selects, serviceCooperator } from './service-cooperator/plan.js';
import {
  CONTROL_LABEL,
  CONTROL_LABEL_VALUE,
  expectationKey,
  isUnavailable,
  parseAvailableConditions,
  type PodState,
  awaitsPreCheck,
} from './protocol/index.js';

/** Server-side selector of the Pods that take part; the watch and the resync list only these. */
export const CONTROLLED_PODS_SELECTOR = `${CONTROL_LABEL}=${CONTROL_LABEL_VALUE}`;

/**
 * What the lifecycle's plan depends on. Anything else on a Pod (container statuses, IPs, probe times) changes
 * nothing the reconciler would do, so those updates are not worth a reconcile.
 */
function lifecycleInputs(obj: KubeObject): unknown {
  const parsed = lifecyclePodSchema.safeParse(obj);
  // Unreadable: let it through, the handler reads the Pod fresh and reports what is wrong with it.
  if (!parsed.success) return obj;
  const pod = parsed.data;
  return {
    labels: pod.metadata.labels ?? {},
    annotations: pod.metadata.annotations ?? {},
    finalizers: pod.metadata.finalizers ?? [],
    deleting: pod.metadata.deletionTimestamp !== undefined,
    conditions: (pod.status?.conditions ?? []).map((c) => [c.type, c.status]),
  };
}

/**
 * Pod events worth a reconcile. The label-selected watch reports a Pod whose control label went as a delete
 * (carrying its last matching version, so the label is still on it): that one passes, because the lifecycle may
 * have left its gate False (planReconcile gives it back). A Pod that was terminating has nothing left to drive; a
 * Pod deleted at once costs one GET that answers 404.
 */
export const lifecycleInputsChanged: Predicate = {
  update: (e) => !isDeepStrictEqual(lifecycleInputs(e.old), lifecycleInputs(e.object)),
  delete: (e) => !e.synthetic && e.object.metadata.deletionTimestamp === undefined,
};

const serviceSelectorSchema = z.object({
  spec: z.object({ selector: z.record(z.string(), z.string()).optional() }).passthrough().optional(),
});

function selectorOf(obj: KubeObject): Record<string, string> {
  const parsed = serviceSelectorSchema.safeParse(obj);
  return parsed.success ? (parsed.data.spec?.selector ?? {}) : {};
}

/**
 * Service events that can make an expected finalizer stale: the Service went away, or its selector changed so it
 * may no longer select the Pod. Pods waiting on such a Service (completing, or not yet service-available) must be
 * looked at again at once; no Pod event would bring them back before the next resync.
 */
export const serviceExpectationMayBeStale: Predicate = {
  create: () => false,
  update: (e) => !isDeepStrictEqual(selectorOf(e.old), selectorOf(e.object)),
  delete: () => true,
  generic: () => false,
};

/** The controlled Pods whose available-conditions annotation expects a finalizer on behalf of this Service. */
export const mapServiceToExpectingPods: Mapper = (e, ctx) => {
  const namespace = e.object.metadata.namespace;
  if (namespace === undefined) return [];
  const key = expectationKey({ kind: 'Service', namespace, name: e.object.metadata.name });
  // The Pods this function watches (its own label-selected watch): another function's Pod watch with
  // another selector holds other Pods, and which one answered must not depend on the order of functions.
  return ctx
    .list(Resources.pod, namespace, CONTROLLED_PODS_SELECTOR)
    .filter((pod) => {
      const parsed = parseAvailableConditions(pod.metadata.annotations ?? {});
      return parsed.ok && parsed.value?.expectedFinalizers?.[key] !== undefined;
    })
    .map((pod) => storeKey(pod));
};

/** Names of the Pods an EndpointSlice routes to (endpoint ready, or its ready condition absent). */
function routedPodsOf(obj: KubeObject): Set<string> {
  const parsed = endpointSliceSchema.safeParse(obj);
  if (!parsed.success) return new Set();
  return new Set(podEndpointsOf(parsed.data).filter((e) => e.ready !== false).map((e) => e.podName));
}

function stoppedRouting(old: KubeObject, object: KubeObject | undefined): string[] {
  const now = object === undefined ? new Set<string>() : routedPodsOf(object);
  return [...routedPodsOf(old)].filter((name) => !now.has(name));
}

/**
 * EndpointSlice events that can let a preparing Pod go on to operate: a slice stopped routing to some Pod
 * (its endpoint turned not ready, or went), or the slice was deleted. A slice that starts routing to a Pod
 * releases nothing.
 */
export const endpointSliceStoppedRouting: Predicate = {
  create: () => false,
  update: (e) => stoppedRouting(e.old, e.object).length > 0,
  delete: () => true,
  generic: () => false,
};

/** The controlled Pods a slice just stopped routing to: they may be waiting for exactly that to operate. */
export const mapEndpointSliceToPods: Mapper = (e, ctx) => {
  const namespace = e.object.metadata.namespace;
  if (namespace === undefined) return [];
  const names = e.type === 'update' ? stoppedRouting(e.old, e.object) : e.type === 'delete' ? [...routedPodsOf(e.object)] : [];
  if (names.length === 0) return [];
  const wanted = new Set(names);
  return ctx
    .list(Resources.pod, namespace, CONTROLLED_PODS_SELECTOR)
    .filter((pod) => wanted.has(pod.metadata.name))
    .map((pod) => storeKey(pod));
};

function podStateOrUndefined(obj: KubeObject): PodState | undefined {
  const parsed = lifecyclePodSchema.safeParse(obj);
  return parsed.success ? podStateOf(parsed.data) : undefined;
}

/** A Pod came back into service (or went away): the budget of its owner has room again. */
export const podReturnedToService: Predicate = {
  create: () => false,
  update: (e) => {
    const old = podStateOrUndefined(e.old);
    const now = podStateOrUndefined(e.object);
    return old !== undefined && now !== undefined && isUnavailable(old) && !isUnavailable(now);
  },
  delete: () => true,
  generic: () => false,
};

/** The Pods of the same owner waiting to be pre-checked: the availability budget may let them go now. */
export const mapToSiblingsAwaitingPreCheck: Mapper = (e, ctx) => {
  const namespace = e.object.metadata.namespace;
  const parsed = lifecyclePodSchema.safeParse(e.object);
  const owner = parsed.success ? controllerUidOf(parsed.data) : undefined;
  if (namespace === undefined || owner === undefined) return [];
  return ctx
    .list(Resources.pod, namespace, CONTROLLED_PODS_SELECTOR)
    .filter((p) => {
      const sibling = lifecyclePodSchema.safeParse(p);
      if (!sibling.success || sibling.data.metadata.uid === e.object.metadata.uid || controllerUidOf(sibling.data) !== owner) return false;
      return awaitsPreCheck(sibling.data.metadata.labels ?? {});
    })
    .map((p) => storeKey(p));
};

function cooperates(obj: KubeObject): boolean {
  return obj.metadata.labels?.[SERVICE_COOPERATION_LABEL] === 'true';
}

/**
 * Service events that change what the in-tree Service cooperator holds: a cooperating Service appears or goes,
 * gains or loses the label, or changes its selector while cooperating.
 */
export const serviceCooperationChanged: Predicate = {
  create: (e) => cooperates(e.object),
  update: (e) => cooperates(e.old) !== cooperates(e.object) || (cooperates(e.object) && !isDeepStrictEqual(selectorOf(e.old), selectorOf(e.object))),
  delete: (e) => cooperates(e.object),
  generic: () => false,
};

/** The controlled Pods the Service selects (before or after the change) or holds with its finalizer. */
export const mapServiceToCoveredPods: Mapper = (e, ctx) => {
  const namespace = e.object.metadata.namespace;
  if (namespace === undefined) return [];
  const selectors = [selectorOf(e.object), ...(e.type === 'update' ? [selectorOf(e.old)] : [])];
  const finalizer = serviceCooperator(namespace, e.object.metadata.name).finalizer;
  return ctx
    .list(Resources.pod, namespace, CONTROLLED_PODS_SELECTOR)
    .filter((pod) => (pod.metadata.finalizers ?? []).includes(finalizer) || selectors.some((s) => selects(s, pod.metadata.labels ?? {})))
    .map((pod) => storeKey(pod));
};
