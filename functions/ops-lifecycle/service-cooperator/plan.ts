import { createHash } from 'node:crypto';
import {
  AVAILABLE_CONDITIONS_ANNOTATION,
  applyDiff,
  diffMaps,
  expectationKey,
  hasServiceReadyGate,
  isLifecycleReady,
  parseAvailableConditions,
  planCooperation,
  PROTECTION_FINALIZER_PREFIX,
  type Cooperator,
  type MapDiff,
  type PodState,
} from '../protocol/index.js';

/**
 * A Service labelled with this (value `true`) is a cooperator of the controlled Pods it selects: Ripple holds
 * each of them with a protection finalizer until the Pod is out of that Service's EndpointSlices.
 */
export const SERVICE_COOPERATION_LABEL = 'ops-lifecycle.ripple.dev/cooperate';
export const SERVICE_COOPERATION_SELECTOR = `${SERVICE_COOPERATION_LABEL}=true`;

/**
 * Ripple's own finalizer name for a Service, not ResourceConsist's (`lifecycleFinalizerFor`): a Pod may also be
 * covered by a ResourceConsist controller for the same Service name, and Ripple must be able to tell its own
 * finalizers apart to release those of a Service that went away or stopped cooperating.
 */
export const SERVICE_FINALIZER_PREFIX = `${PROTECTION_FINALIZER_PREFIX}/ripple-service-`;

export function serviceCooperator(namespace: string, name: string): Cooperator {
  return {
    key: expectationKey({ kind: 'Service', namespace, name }),
    finalizer: `${SERVICE_FINALIZER_PREFIX}${createHash('md5').update(name).digest('hex').slice(0, 16)}`,
  };
}

/** A cooperating Service as the plan needs it. */
export interface CooperatingService {
  name: string;
  /** spec.selector; a Service without one selects no Pod (its endpoints are managed by hand). */
  selector: Readonly<Record<string, string>>;
}

export function selects(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean {
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([k, v]) => labels[k] === v);
}

export interface ServiceCooperationInput {
  namespace: string;
  pod: PodState;
  /** The Pod's namespace's Services labelled for cooperation. */
  services: readonly CooperatingService[];
  /**
   * Names of the Services whose EndpointSlices still route to the Pod (ready, or readiness unknown). Undefined
   * when not looked up yet: the plan then says whether it needs them.
   */
  routedBy?: ReadonlySet<string>;
}

export interface ServiceCooperationPlan {
  annotations: MapDiff;
  /** The whole new finalizer list, when it changes. */
  finalizers?: string[];
  /** A finalizer would be released, but whether the Service still routes to the Pod was not looked up. */
  needsRoutes: boolean;
  /** Services whose finalizer stays because their EndpointSlices still route to the Pod. */
  heldBy: string[];
  changed: boolean;
}

/**
 * The cooperation of every labelled Service with one Pod, as one metadata change (protocol/planCooperation for
 * each, folded in turn):
 * - a Service that selects the Pod records its expected finalizer, and holds the Pod with the finalizer while the
 *   Pod is lifecycle-ready (finalizer first: added as soon as the Pod is ready, so a lifecycle that begins later
 *   always waits for this Service);
 * - when the Pod is no longer lifecycle-ready (its gate went False, it is being deleted), or the Service stops
 *   covering it (gone, unlabelled, no longer selecting), the finalizer is released only once none of that
 *   Service's EndpointSlices routes to the Pod. That is the whole point: operate (or the Pod's deletion) waits
 *   until the load balancers following the Service can no longer send it requests.
 * A finalizer of Ripple's naming whose Service is not among `services` is a Service that went away or stopped
 * cooperating: it is released the same way (at once when the Pod is not being drained), and its expectation
 * forgotten.
 */
export function planServiceCooperation(input: ServiceCooperationInput): ServiceCooperationPlan {
  const { namespace, pod, services, routedBy } = input;
  let annotations: Record<string, string> = { ...pod.annotations };
  let finalizers = [...pod.finalizers];
  let needsRoutes = false;
  const heldBy: string[] = [];

  const known = new Set<string>();
  const steps: Array<{ name: string | undefined; cooperator: Cooperator; selected: boolean }> = [];
  for (const s of [...services].sort((a, b) => a.name.localeCompare(b.name))) {
    const cooperator = serviceCooperator(namespace, s.name);
    known.add(cooperator.finalizer);
    steps.push({ name: s.name, cooperator, selected: selects(s.selector, pod.labels) });
  }
  // Ripple's finalizers (and expectations) left behind by Services not cooperating any more.
  const expected = parseAvailableConditions(pod.annotations);
  const leftovers = new Map<string, string>();
  if (expected.ok) {
    for (const [key, finalizer] of Object.entries(expected.value?.expectedFinalizers ?? {})) {
      if (finalizer.startsWith(SERVICE_FINALIZER_PREFIX) && !known.has(finalizer)) leftovers.set(finalizer, key);
    }
  }
  for (const f of pod.finalizers) if (f.startsWith(SERVICE_FINALIZER_PREFIX) && !known.has(f) && !leftovers.has(f)) leftovers.set(f, '');
  for (const [finalizer, key] of [...leftovers].sort()) {
    const name = key.split('/')[2];
    steps.push({ name, cooperator: { key: key || `Service/${namespace}/?`, finalizer }, selected: false });
  }

  for (const step of steps) {
    const plan = planCooperation({ pod: { ...pod, annotations, finalizers }, cooperator: step.cooperator, selected: step.selected });
    // A release of a Pod being drained waits, whole (finalizer and expectation), while the Service may still route to the Pod. A finalizer
    // whose Service is unknown (no expectation names it) cannot be routing through a Service.
    // A Pod still lifecycle-ready is not being drained (the Service merely stopped covering it): nothing to wait for.
    // A Pod without the readiness gate (created before it was enrolled) stays Ready, so its endpoints never go
    // before it is deleted: waiting would hold its lifecycle forever; it is drained by the condition alone.
    const canLeaveEndpoints = hasServiceReadyGate(pod) || pod.deleting;
    if (plan.removeFinalizer !== undefined && step.name !== undefined && !isLifecycleReady(pod) && canLeaveEndpoints) {
      if (routedBy === undefined) {
        needsRoutes = true;
        continue;
      }
      if (routedBy.has(step.name)) {
        heldBy.push(step.name);
        continue;
      }
    }
    annotations = applyDiff(annotations, plan.annotations);
    if (plan.addFinalizer !== undefined) finalizers = [...finalizers, plan.addFinalizer];
    if (plan.removeFinalizer !== undefined) finalizers = finalizers.filter((f) => f !== plan.removeFinalizer);
  }

  const diff = diffMaps(pod.annotations, annotations);
  // Only the annotation this plan owns: nothing else of the Pod's annotations is touched.
  const own: MapDiff = {
    set: Object.fromEntries(Object.entries(diff.set).filter(([k]) => k === AVAILABLE_CONDITIONS_ANNOTATION)),
    remove: diff.remove.filter((k) => k === AVAILABLE_CONDITIONS_ANNOTATION),
  };
  const finalizersChanged = finalizers.length !== pod.finalizers.length || finalizers.some((f, i) => f !== pod.finalizers[i]);
  return {
    annotations: own,
    ...(finalizersChanged ? { finalizers } : {}),
    needsRoutes,
    heldBy,
    changed: finalizersChanged || Object.keys(own.set).length > 0 || own.remove.length > 0,
  };
}
