import { createHash } from 'node:crypto';
import { withExpectation, withoutExpectations, type ExpectedFinalizer } from './available-conditions.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, PROTECTION_FINALIZER_PREFIX } from './keys.js';
import { emptyDiff, isEmptyDiff, type MapDiff } from './metadata-diff.js';
import { isPodReady, serviceReadyStatus, type PodState } from './pod-state.js';

/**
 * Should a cooperation controller (traffic, monitoring, …) serve this Pod? Ready, not held out of service by the
 * lifecycle, not being deleted. Checking PodReady as well as service-ready covers Pods without the gate in
 * their spec and Pods whose node went away while service-ready still says True. An absent service-ready
 * counts as ready, as in ResourceConsist.
 */
export function isLifecycleReady(pod: Pick<PodState, 'conditions' | 'deleting'>): boolean {
  if (pod.deleting) return false;
  const gate = serviceReadyStatus(pod);
  return isPodReady(pod) && (gate === undefined || gate === 'True');
}

/** ResourceConsist's finalizer name for an employer: the prefix plus 16 hex digits of md5(name). */
export function lifecycleFinalizerFor(employerName: string): string {
  return `${PROTECTION_FINALIZER_PREFIX}/${createHash('md5').update(employerName).digest('hex').slice(8, 24)}`;
}

export type Cooperator = ExpectedFinalizer;

export interface CooperationInput {
  pod: Pick<PodState, 'annotations' | 'finalizers' | 'conditions' | 'deleting'>;
  cooperator: Cooperator;
  /** Does this cooperator still cover the Pod (its Service exists and selects it)? */
  selected: boolean;
}

export interface CooperationPlan {
  /** Serve the Pod (register in the load balancer, …) — do that before adding the finalizer. */
  lifecycleReady: boolean;
  /** metadata.annotations change: the expected finalizer recorded, or forgotten */
  annotations: MapDiff;
  /** Add after the Pod is registered: the lifecycle then knows this cooperator must let go before operate. */
  addFinalizer?: string;
  /** Remove after the Pod is deregistered: this releases the Pod to be operated. */
  removeFinalizer?: string;
  changed: boolean;
}

/**
 * The cooperation side of the protocol, for one cooperator and one Pod:
 * - while it covers the Pod, its expected finalizer is recorded in available-conditions, so the Pod is not
 *   declared available (and a lifecycle does not complete) before it has registered the Pod again;
 * - lifecycle-ready → hold the Pod with the protection finalizer; not ready → release it;
 * - once it no longer covers the Pod → release it and forget the expectation.
 * Throws when the finalizer lacks the protection prefix: the lifecycle would not wait for it.
 */
export function planCooperation(input: CooperationInput): CooperationPlan {
  const { pod, cooperator, selected } = input;
  if (!cooperator.finalizer.startsWith(`${PROTECTION_FINALIZER_PREFIX}/`)) {
    throw new Error(`finalizer ${cooperator.finalizer} lacks the prefix ${PROTECTION_FINALIZER_PREFIX}/`);
  }
  const has = pod.finalizers.includes(cooperator.finalizer);
  const annotations = emptyDiff();
  const plan: CooperationPlan = { lifecycleReady: false, annotations, changed: false };

  if (!selected) {
    const pruned = withoutExpectations(pod.annotations, [cooperator.key]);
    if (pruned !== undefined) annotations.set[AVAILABLE_CONDITIONS_ANNOTATION] = pruned;
    if (has) plan.removeFinalizer = cooperator.finalizer;
  } else {
    const recorded = withExpectation(pod.annotations, cooperator);
    if (recorded !== undefined) annotations.set[AVAILABLE_CONDITIONS_ANNOTATION] = recorded;
    plan.lifecycleReady = isLifecycleReady(pod);
    if (plan.lifecycleReady && !has) plan.addFinalizer = cooperator.finalizer;
    if (!plan.lifecycleReady && has) plan.removeFinalizer = cooperator.finalizer;
  }
  plan.changed = !isEmptyDiff(annotations) || plan.addFinalizer !== undefined || plan.removeFinalizer !== undefined;
  return plan;
}
