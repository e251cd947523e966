import { SERVICE_READY_CONDITION, SERVICE_READY_EVENT_REASON, SERVICE_READY_MESSAGE } from './keys.js';
import type { ConditionStatus } from './pod-state.js';
import { requiresOffline } from './stage.js';
import { rfc3339, type UnixNanos } from './timestamp.js';
import { liveLifecycles, type LifecycleView } from './view.js';

export interface DesiredServiceReady {
  status: 'True' | 'False';
  /** CamelCase reason put on the condition */
  reason: 'StayOffline' | 'LifecycleInProgress' | 'LifecycleCompleting' | 'NoLifecycle' | 'NotControlled';
}

/**
 * The service-ready value the labels call for, or undefined to leave it as it is.
 *
 * The value is a function of the labels alone, and it is False whenever *any* ID is between pre-checked and
 * completing. So with one ID completing and another one anywhere in preparing…post-checked it stays False, and
 * it turns True only once every ID has reached completing: the gate moves False→True once per round instead of
 * following whichever ID was looked at last (kuperator #248).
 * IDs still in pre-check have not taken the Pod yet, so they neither take it out of service nor bring it back.
 * With stay-offline the gate is never turned True; it is left as it is outside a lifecycle.
 */
export function desiredServiceReady(view: LifecycleView): DesiredServiceReady | undefined {
  const live = liveLifecycles(view);
  if (live.some((e) => requiresOffline(e.stage))) return { status: 'False', reason: 'LifecycleInProgress' };
  // stay-offline (kuperator #246): the next lifecycle takes the Pod out and it is not brought back; a Pod that
  // is serving when labelled keeps serving until then, and a new one is never put in service.
  if (view.stayOffline) return live.some((e) => e.stage === 'completing') ? { status: 'False', reason: 'StayOffline' } : undefined;
  if (live.some((e) => e.stage === 'completing')) return { status: 'True', reason: 'LifecycleCompleting' };
  if (live.length === 0) return { status: 'True', reason: 'NoLifecycle' };
  return undefined;
}

/** A status.conditions entry to write (merge by type). */
export interface ServiceReadyConditionWrite {
  type: typeof SERVICE_READY_CONDITION;
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface PlanEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/**
 * The condition write and its event when the observed status differs from the desired one; nothing otherwise,
 * so lastTransitionTime moves only when the status does.
 */
export function serviceReadyWrite(
  observed: ConditionStatus | undefined,
  desired: DesiredServiceReady | undefined,
  now: UnixNanos,
): { condition: ServiceReadyConditionWrite; event: PlanEvent } | undefined {
  if (desired === undefined || observed === desired.status) return undefined;
  const verb = observed === undefined ? 'append' : 'update';
  return {
    condition: {
      type: SERVICE_READY_CONDITION,
      status: desired.status,
      reason: desired.reason,
      message: SERVICE_READY_MESSAGE,
      lastTransitionTime: rfc3339(now),
    },
    event: { type: 'Normal', reason: SERVICE_READY_EVENT_REASON, message: `${verb} service readiness gate to: ${desired.status}` },
  };
}

/**
 * spec.readinessGates with the service-ready gate appended if missing. readinessGates cannot change after a
 * Pod is created, so whoever creates the Pod (its owner, or a Pod-create admission webhook) must call this.
 */
export function withServiceReadyGate<G extends { conditionType: string }>(
  gates: readonly G[] | undefined,
): Array<G | { conditionType: string }> {
  const list: Array<G | { conditionType: string }> = [...(gates ?? [])];
  if (!list.some((g) => g.conditionType === SERVICE_READY_CONDITION)) list.push({ conditionType: SERVICE_READY_CONDITION });
  return list;
}
