import { admitLabels } from './admission.js';
import {
  expectationStatus,
  expectedFinalizersSatisfied,
  serviceOfExpectationKey,
  withoutExpectations,
  type ExpectedFinalizer,
} from './available-conditions.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, Label, perIdKey, permissionKey, SERVICE_READY_CONDITION } from './keys.js';
import { diffMaps, emptyDiff, isEmptyDiff, type MapDiff } from './metadata-diff.js';
import { hasServiceReadyGate, isControlled, isPodReady, serviceReadyStatus, type PodState } from './pod-state.js';
import { readyToOperate } from './ready-to-operate.js';
import {
  desiredServiceReady,
  serviceReadyWrite,
  type PlanEvent,
  type ServiceReadyConditionWrite,
} from './readiness-gate.js';
import { formatTimestamp, type UnixNanos } from './timestamp.js';
import { liveLifecycles, parseLifecycleView, type LifecycleView } from './view.js';

/**
 * Outcomes of kuperator's PodTransitionRule stages. Ripple has no rule CRD; with no rules selecting the Pod
 * upstream passes immediately, which is the default here. A caller with its own checks passes them in.
 */
export interface TransitionChecks {
  preCheck: boolean;
  postCheck: boolean;
}

export interface ReconcileInput {
  pod: PodState;
  now: UnixNanos;
  checks?: Partial<TransitionChecks>;
  /** Expected-finalizer keys found stale (see expectationsToVerify / isServiceExpectationStale). */
  staleExpectationKeys?: Iterable<string>;
  /**
   * Is the Pod's traffic off (trafficOff: not Ready, out of every EndpointSlice)? operate is granted only when
   * it is. Defaults to true for callers that judge by the gate alone; the handler always says.
   */
  trafficOff?: boolean;
}

export interface LifecyclePlan {
  /** metadata.labels to change (one update with a resourceVersion precondition) */
  labels: MapDiff;
  /** metadata.annotations to change, in the same update */
  annotations: MapDiff;
  /** status.conditions entry to write through pods/status, after the metadata update */
  serviceReady?: ServiceReadyConditionWrite;
  events: PlanEvent[];
  /** things a human should know (malformed labels, unreadable annotation, missing gate) */
  warnings: string[];
  /**
   * States that hold the lifecycle (or every other ID) until a human acts: malformed labels, an unreadable
   * annotation. The handler reports each as a Warning Event on every reconcile that sees it, changed or not.
   */
  stuck: string[];
  /** the lifecycle as it will read once the plan is applied */
  view: LifecycleView;
  changed: boolean;
  skipped?: 'NotControlled' | 'Deleting';
}

/**
 * Expected finalizers worth checking for staleness: missing ones that name a Service. The handler looks the
 * Services up and passes the stale keys back in; a finalizer that will never come back must not hold the Pod.
 */
export function expectationsToVerify(pod: Pick<PodState, 'annotations' | 'finalizers'>): Array<ExpectedFinalizer & { service: { namespace: string; name: string } }> {
  return expectationStatus(pod).unsatisfied.flatMap((e) => {
    const service = serviceOfExpectationKey(e.key);
    return service === undefined ? [] : [{ ...e, service }];
  });
}

/**
 * One reconcile of the lifecycle controller, as data: everything kuperator's webhook would do to the writes
 * other actors made since the last look, then what its controller does next (pre-check/post-check labels,
 * service-available, the gate), then the webhook's part of that write. The handler applies `labels` and
 * `annotations` in one metadata update and then `serviceReady` through the status subresource; the watch event
 * of that write brings the next step. Nothing here reads a clock: `now` stamps every label written.
 */
export function planReconcile(input: ReconcileInput): LifecyclePlan {
  const { pod, now } = input;
  const observedView = parseLifecycleView(pod.labels);
  const noop = (skipped: LifecyclePlan['skipped']): LifecyclePlan => ({
    labels: emptyDiff(),
    annotations: emptyDiff(),
    events: [],
    warnings: [],
    stuck: [],
    view: observedView,
    changed: false,
    skipped,
  });
  if (!isControlled(pod.labels)) return leftTheLifecycle(pod, now) ?? noop('NotControlled');
  // A Pod on its way out is left to its finalizers; relabelling it would only race the deletion.
  if (pod.deleting) return noop('Deleting');

  const checks: TransitionChecks = { preCheck: true, postCheck: true, ...input.checks };
  const stale = new Set(input.staleExpectationKeys ?? []);
  const stuck = [...observedView.problems];
  const expectations = expectationStatus(pod);
  if (!expectations.readable && expectations.error !== undefined) stuck.push(expectations.error);
  const warnings = [...stuck];
  if (!hasServiceReadyGate(pod)) {
    warnings.push(`spec.readinessGates lacks ${SERVICE_READY_CONDITION}: the Pod's Ready condition will not follow the lifecycle`);
  }

  const satisfied = expectedFinalizersSatisfied(pod, stale);
  const ready = readyToOperate(pod) && (input.trafficOff ?? true);
  const podReady = isPodReady(pod);
  const ts = formatTimestamp(now);

  // Catch up on the writes of others (Begin, Finish, kubelet) as the webhook would have.
  const caughtUp = admitLabels({ labels: pod.labels, previousLabels: pod.labels, readyToOperate: ready, expectedFinalizersSatisfied: satisfied, now }).labels;

  const next: Record<string, string> = { ...caughtUp };
  const view = parseLifecycleView(caughtUp);
  const live = liveLifecycles(view);
  if (live.length === 0) {
    // stay-offline: never declared available again; a label still there from before goes with the next lifecycle.
    if (!view.stayOffline && !view.serviceAvailable && satisfied && podReady) {
      next[Label.serviceAvailable] = ts;
      delete next[Label.creating];
      delete next[Label.completing];
    }
  } else {
    // Stages are judged per ID: kuperator picks one stage for the whole Pod, from an unordered set, and can
    // then stamp post-checked onto an ID that has only just begun.
    for (const e of live) {
      if (checks.preCheck && e.stage === 'pre-check' && e.labels.operationType !== undefined) {
        const perm = permissionKey(e.labels.operationType);
        if (!(perm in next)) next[perm] = ts;
        next[perIdKey('preChecked', e.id)] = ts;
      }
      if (checks.postCheck && e.stage === 'post-check') next[perIdKey('postChecked', e.id)] = ts;
    }
  }
  // A Pod that is not Ready is not available, whatever happened before (kuperator #283).
  if (!podReady) delete next[Label.serviceAvailable];

  const finalLabels = admitLabels({ labels: next, previousLabels: caughtUp, readyToOperate: ready, expectedFinalizersSatisfied: satisfied, now }).labels;
  const labels = diffMaps(pod.labels, finalLabels);

  const annotations = emptyDiff();
  const pruned = stale.size > 0 ? withoutExpectations(pod.annotations, stale) : undefined;
  if (pruned !== undefined) annotations.set[AVAILABLE_CONDITIONS_ANNOTATION] = pruned;

  const finalView = parseLifecycleView(finalLabels);
  const gate = serviceReadyWrite(serviceReadyStatus(pod), desiredServiceReady(finalView), now);
  const events: PlanEvent[] = gate ? [gate.event] : [];

  return {
    labels,
    annotations,
    ...(gate ? { serviceReady: gate.condition } : {}),
    events,
    warnings,
    stuck,
    view: finalView,
    changed: !isEmptyDiff(labels) || !isEmptyDiff(annotations) || gate !== undefined,
  };
}

/**
 * A Pod whose control label went away (its owner took it out of the lifecycle) keeps whatever service-ready the
 * lifecycle last wrote. If that was False, its Ready would stay False forever, with nobody left to flip it: give
 * the gate back. The lifecycle labels stay, as data; nothing drives them any more.
 */
function leftTheLifecycle(pod: PodState, now: UnixNanos): LifecyclePlan | undefined {
  if (pod.deleting || serviceReadyStatus(pod) !== 'False') return undefined;
  const gate = serviceReadyWrite('False', { status: 'True', reason: 'NotControlled' }, now);
  if (gate === undefined) return undefined;
  return {
    labels: emptyDiff(),
    annotations: emptyDiff(),
    serviceReady: gate.condition,
    events: [gate.event],
    warnings: [],
    stuck: [],
    view: parseLifecycleView(pod.labels),
    changed: true,
  };
}
