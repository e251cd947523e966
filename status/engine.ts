import {
  type ConditionInput,
  InvalidConditionError,
  findCondition,
  setCondition,
  toCamelCaseReason,
} from './conditions.js';
import { DEFAULT_GRACE_PERIOD_MS, type GraceEvaluation, connectivityTroubleSince, evaluateGrace } from './grace.js';
import { isFailingPhase, isStalledPhase, phaseSeverity, worstPhase } from './phase.js';
import { type Condition, type EngineStatus, type Phase, PhaseSchema } from './schema.js';
import { type ConditionTransition, conditionTransitions, statusChanged } from './transitions.js';
import { CHILD_CONDITION_SUFFIX, ConditionType, Reason } from './vocabulary.js';

/** A child's health as its parent's reconciler observed it. `Unknown`: could not be evaluated. */
export type ChildState = Phase | 'Unknown';

export interface ChildHealth {
  /** CamelCase; the condition is `{name}Ready` (e.g. `ServingGroups` → `ServingGroupsReady`). */
  name: string;
  state: ChildState;
  /** The child's own reason (e.g. `ImagePullBackOff`); defaults to the state's name. */
  reason?: string;
  /** Taken from the child's own conditions where possible, so users need not hunt for it. */
  message?: string;
  /**
   * The child has stopped making progress and will not by itself (a Deployment-style progress deadline
   * passed): `Stalled=True` with its reason, whatever the phase, so kstatus tools read it as Failed.
   */
  stalled?: boolean;
}

/** Seed 002 §3's issue classes, plus a missing user-referenced object (aim-engine's MissingUpstream). */
export const ERROR_CLASSES = ['Spec', 'MissingReference', 'Auth', 'Connectivity', 'Capacity'] as const;
export type ErrorClass = (typeof ERROR_CLASSES)[number];

export interface ClassifiedError {
  class: ErrorClass;
  /** Shown to users; for spec errors it should name the field (`spec.replicas: must be >= 0`). */
  message: string;
  /** Overrides the reason of the class's parent condition (ConfigValid, AuthValid, DependenciesReachable). */
  reason?: string;
  /** The child this error concerns, whose `{child}Ready` then says so. */
  child?: string;
}

export interface StateEngineInput {
  /** `metadata.generation` of the object being reconciled. */
  generation: number;
  now: Date;
  /** The status as read from the object: phase, conditions (including upstream ones). */
  previous?: EngineStatus | undefined;
  children?: readonly ChildHealth[];
  errors?: readonly ClassifiedError[];
  /**
   * Upstream conditions computed in the same reconcile (Kthena's `Available`, WVA's
   * `TargetResolved`…), written with the same lastTransitionTime rules. Conditions not mentioned
   * here nor owned by the engine are carried over untouched.
   */
  upstreamConditions?: readonly ConditionInput[];
  /**
   * When connectivity trouble was first seen, for callers that persist it with more precision than
   * metav1.Time; by default it is read from the previous `DependenciesReachable=False` condition.
   */
  connectivityTroubleSince?: Date;
  gracePeriodMs?: number;
  /**
   * The caller knows that readiness lost now is the work its spec asks for (a rollout, a scale; for
   * ModelServing, a new generation): Ready or a child turning False into a phase that is not failing
   * is announced as a Normal Event, not a Warning. Warnings then mean something is wrong; a classified
   * error (a quota, a refused pull…) always explains a loss as one, so it keeps its Warning.
   */
  routine?: boolean;
}

export interface StateEngineResult {
  status: { phase: Phase; observedGeneration: number; conditions: Condition[] };
  /** False when `status` equals the previous status: skip the status write. */
  changed: boolean;
  /** Status changes of every condition, with the Event each one calls for. */
  transitions: ConditionTransition[];
  /**
   * A spec error or missing reference: retrying cannot help, so the caller must not enter a retry
   * loop (return normally, no throw, no requeue). A spec edit bumps the generation and the watch
   * brings the object back; a missing reference is healed by a watch on it or the resync tick.
   */
  terminal: boolean;
  /** Set while a connectivity grace period runs: reconcile again after this long to re-check it. */
  requeueAfterMs?: number;
  /** How the connectivity grace period was judged; present when there were connectivity errors. */
  grace?: GraceEvaluation;
}

const CHILD_NAME = /^[A-Z][A-Za-z0-9]*$/;

/** Parent conditions that are False only when something is wrong (never merely in progress). */
const VALIDITY_TYPES: ReadonlySet<string> = new Set([
  ConditionType.ConfigValid,
  ConditionType.AuthValid,
  ConditionType.DependenciesReachable,
]);

/** What an error tagged with a child does to that child's condition (seed 002 §3). */
const ERROR_CHILD_EFFECT: Record<ErrorClass, { state: ChildState; reason: string }> = {
  Spec: { state: 'Failed', reason: Reason.InvalidSpec },
  MissingReference: { state: 'Failed', reason: Reason.ReferenceNotFound },
  Auth: { state: 'Degraded', reason: Reason.AuthFailed },
  Connectivity: { state: 'Unknown', reason: Reason.Unknown },
  Capacity: { state: 'Starting', reason: Reason.InsufficientCapacity },
};

interface EffectiveChild {
  name: string;
  state: ChildState;
  reason: string | undefined;
  message: string | undefined;
  errorClass?: ErrorClass;
}

/** A reason for the phase: the worst candidate names the phase and explains `Ready=False`. */
interface Verdict {
  phase: Phase;
  reason: string;
  message: string;
}

export function childConditionType(childName: string): string {
  return `${childName}${CHILD_CONDITION_SUFFIX}`;
}

function joinMessages(messages: readonly string[]): string {
  return [...new Set(messages.filter((m) => m.length > 0))].join('; ');
}

function byClass(errors: readonly ClassifiedError[], cls: ErrorClass): ClassifiedError[] {
  return errors.filter((e) => e.class === cls);
}

function mergeChildren(children: readonly ChildHealth[], errors: readonly ClassifiedError[]): EffectiveChild[] {
  const merged = new Map<string, EffectiveChild>();
  for (const child of children) {
    if (!CHILD_NAME.test(child.name)) {
      throw new InvalidConditionError(`child name ${JSON.stringify(child.name)} must be CamelCase`);
    }
    if (merged.has(child.name)) throw new InvalidConditionError(`child ${child.name} is listed twice`);
    merged.set(child.name, { name: child.name, state: child.state, reason: child.reason, message: child.message });
  }
  for (const error of errors) {
    if (error.child === undefined) continue;
    if (!CHILD_NAME.test(error.child)) {
      throw new InvalidConditionError(`child name ${JSON.stringify(error.child)} must be CamelCase`);
    }
    const existing = merged.get(error.child);
    // Several errors on one child: the most severe class (earliest in ERROR_CLASSES) speaks for it.
    if (
      existing?.errorClass !== undefined &&
      ERROR_CLASSES.indexOf(existing.errorClass) <= ERROR_CLASSES.indexOf(error.class)
    ) {
      continue;
    }
    const effect = ERROR_CHILD_EFFECT[error.class];
    merged.set(error.child, {
      name: error.child,
      state: effect.state,
      reason: effect.reason,
      message: error.message,
      errorClass: error.class,
    });
  }
  return [...merged.values()];
}

function pickVerdict(candidates: readonly Verdict[]): Verdict {
  let best: Verdict | undefined;
  for (const candidate of candidates) {
    if (best === undefined || phaseSeverity(candidate.phase) < phaseSeverity(best.phase)) best = candidate;
  }
  return best ?? { phase: 'Ready', reason: Reason.AllComponentsReady, message: '' };
}

/**
 * The state engine (seed 002): from what a reconcile observed, the status to write.
 *
 * Phase, worst wins (ties go to the earlier rule):
 * 1. spec error or missing reference → Failed (terminal, no retry loop);
 * 2. auth error → Degraded (the seed; aim-engine's code says Failed);
 * 3. connectivity error → Degraded once the grace period has run out for a resource that was
 *    Starting/Ready/Degraded; Pending while it never got that far (informational); no effect
 *    within the grace period, where children that became Unknown keep their last condition;
 * 4. capacity → Starting (not an error: progressing);
 * 5. children: the worst child state, Unknown counting as Starting; Ready when all are Ready.
 */
export function computeStatus(input: StateEngineInput): StateEngineResult {
  const { generation, now } = input;
  if (!Number.isInteger(generation) || generation < 0) {
    throw new RangeError(`generation must be a non-negative integer, got ${generation}`);
  }
  const nowMs = now.getTime();
  const errors = input.errors ?? [];
  const previousConditions = input.previous?.conditions ?? [];
  const parsedPhase = PhaseSchema.safeParse(input.previous?.phase);
  const previousPhase = parsedPhase.success ? parsedPhase.data : undefined;

  const spec = byClass(errors, 'Spec');
  const missing = byClass(errors, 'MissingReference');
  const auth = byClass(errors, 'Auth');
  const connectivity = byClass(errors, 'Connectivity');
  const capacity = byClass(errors, 'Capacity');

  const grace =
    connectivity.length > 0
      ? evaluateGrace({
          previousPhase,
          sinceMs: input.connectivityTroubleSince?.getTime() ?? connectivityTroubleSince(previousConditions),
          nowMs,
          gracePeriodMs: input.gracePeriodMs ?? DEFAULT_GRACE_PERIOD_MS,
        })
      : undefined;
  const protecting = grace?.state === 'within';

  // Children first: their conditions, and the phase they add up to.
  const childConditions: { type: string; keep?: Condition; input?: ConditionInput; failing?: boolean }[] = [];
  const childVerdicts: Verdict[] = [];
  for (const child of mergeChildren(input.children ?? [], errors)) {
    const type = childConditionType(child.name);
    const previous = findCondition(previousConditions, type);
    if (child.state === 'Unknown' && protecting && previous?.status === 'True') {
      // A hiccup must not flap readiness: within the grace period the last known state stands.
      childConditions.push({ type, keep: previous });
      continue;
    }
    const status = child.state === 'Ready' ? 'True' : 'False';
    const reason = toCamelCaseReason(child.reason, child.state);
    const message = child.message ?? (child.state === 'Ready' ? '' : `${child.name} is ${child.state}`);
    childConditions.push({
      type,
      input: { type, status, reason, message, observedGeneration: generation },
      failing: child.state !== 'Unknown' && isFailingPhase(child.state),
    });
    const phase: Phase = child.state === 'Unknown' ? 'Starting' : child.state;
    childVerdicts.push({ phase, reason, message: child.state === 'Ready' ? '' : `${child.name}: ${message}` });
  }
  const childPhase = worstPhase(childVerdicts.map((v) => v.phase));
  const worstChildren = childVerdicts.filter((v) => v.phase === childPhase);
  const notReadyMessages = childVerdicts.filter((v) => v.phase !== 'Ready').map((v) => v.message);

  const candidates: Verdict[] = [];
  if (spec.length + missing.length > 0) {
    candidates.push({
      phase: 'Failed',
      reason: spec.length > 0 ? Reason.InvalidSpec : Reason.ReferenceNotFound,
      message: joinMessages([...spec, ...missing].map((e) => e.message)),
    });
  }
  if (auth.length > 0) {
    candidates.push({ phase: 'Degraded', reason: Reason.AuthFailed, message: joinMessages(auth.map((e) => e.message)) });
  }
  if (grace !== undefined && grace.state !== 'within') {
    candidates.push({
      phase: grace.state === 'expired' ? 'Degraded' : 'Pending',
      reason: Reason.DependenciesUnreachable,
      message: joinMessages(connectivity.map((e) => e.message)),
    });
  }
  if (capacity.length > 0) {
    candidates.push({
      phase: 'Starting',
      reason: Reason.InsufficientCapacity,
      message: joinMessages(capacity.map((e) => e.message)),
    });
  }
  if (childPhase !== 'Ready') {
    candidates.push({
      phase: childPhase,
      reason: worstChildren[0]?.reason ?? childPhase,
      message: joinMessages(notReadyMessages),
    });
  }
  const verdict = pickVerdict(candidates);
  const { phase } = verdict;

  let conditions: Condition[] = [...previousConditions];
  const owned = new Set<string>([...Object.values(ConditionType), ...childConditions.map((c) => c.type)]);
  for (const upstream of input.upstreamConditions ?? []) {
    if (owned.has(upstream.type)) {
      throw new InvalidConditionError(`upstream condition ${upstream.type} collides with a state-engine condition`);
    }
    conditions = setCondition(conditions, { ...upstream, observedGeneration: upstream.observedGeneration ?? generation }, now);
  }

  const set = (type: string, ok: boolean, okReason: string, badReason: string, badMessage: string, okMessage = '') => {
    conditions = setCondition(
      conditions,
      {
        type,
        status: ok ? 'True' : 'False',
        reason: ok ? okReason : badReason,
        message: ok ? okMessage : badMessage,
        observedGeneration: generation,
      },
      now,
    );
  };
  const firstReason = (list: readonly ClassifiedError[], fallback: string) => toCamelCaseReason(list[0]?.reason, fallback);

  set(
    ConditionType.Ready,
    phase === 'Ready',
    Reason.AllComponentsReady,
    toCamelCaseReason(verdict.reason, phase),
    verdict.message,
  );
  const configErrors = [...spec, ...missing];
  set(
    ConditionType.ConfigValid,
    configErrors.length === 0,
    Reason.ConfigurationValid,
    spec.length > 0 ? firstReason(spec, Reason.InvalidSpec) : firstReason(missing, Reason.ReferenceNotFound),
    joinMessages(configErrors.map((e) => e.message)),
  );
  set(
    ConditionType.AuthValid,
    auth.length === 0,
    Reason.AuthenticationValid,
    firstReason(auth, Reason.AuthFailed),
    joinMessages(auth.map((e) => e.message)),
  );
  set(
    ConditionType.DependenciesReachable,
    connectivity.length === 0,
    Reason.Reachable,
    firstReason(connectivity, Reason.DependenciesUnreachable),
    joinMessages(connectivity.map((e) => e.message)),
  );
  // Abnormal-true: True only when the controller cannot make progress without outside change (or a
  // child says it stopped progressing: a passed progress deadline).
  const stalled = isStalledPhase(phase) || (phase !== 'Ready' && (input.children ?? []).some((c) => c.stalled === true));
  conditions = setCondition(
    conditions,
    stalled
      ? {
          type: ConditionType.Stalled,
          status: 'True',
          reason: toCamelCaseReason(verdict.reason, phase),
          message: verdict.message,
          observedGeneration: generation,
        }
      : { type: ConditionType.Stalled, status: 'False', reason: phase, message: '', observedGeneration: generation },
    now,
  );
  for (const child of childConditions) {
    if (child.input !== undefined) conditions = setCondition(conditions, child.input, now);
    // A kept condition is already in the list, unchanged: it still says what it last observed.
  }

  const status = { phase, observedGeneration: generation, conditions };
  const childFailing = new Map(childConditions.map((c) => [c.type, c.failing === true]));
  const announced = conditionTransitions(
    previousConditions,
    conditions,
    (type) => (type === ConditionType.Ready || VALIDITY_TYPES.has(type) || childFailing.has(type) ? 'positive' : undefined),
    // A condition first written False is a failure only if it says something broke, not that
    // something is still on its way (a new resource's Ready=False/Starting is no Warning).
    (condition) =>
      VALIDITY_TYPES.has(condition.type) ||
      (condition.type === ConditionType.Ready ? isFailingPhase(phase) : childFailing.get(condition.type) === true),
  );
  const routine = (t: ConditionTransition) =>
    input.routine === true &&
    errors.length === 0 &&
    t.eventType === 'Warning' &&
    (t.type === ConditionType.Ready ? !isFailingPhase(phase) : childFailing.get(t.type) === false);
  const transitions = announced.map((t): ConditionTransition => (routine(t) ? { ...t, eventType: 'Normal' } : t));
  const result: StateEngineResult = {
    status,
    changed: statusChanged(input.previous, status),
    transitions,
    terminal: configErrors.length > 0,
  };
  if (grace !== undefined) result.grace = grace;
  if (grace?.state === 'within') result.requeueAfterMs = grace.remainingMs;
  return result;
}
