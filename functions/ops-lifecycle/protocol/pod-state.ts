import type { V1Pod } from '@kubernetes/client-node';
import { CONTROL_LABEL, CONTROL_LABEL_VALUE, PROTECTION_FINALIZER_PREFIX, SERVICE_READY_CONDITION } from './keys.js';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface PodConditionState {
  type: string;
  status: ConditionStatus;
}

/**
 * The slice of a Pod the protocol reads. Plain data so the logic stays testable without a client;
 * `podStateFromV1Pod` builds it from a fetched Pod.
 */
export interface PodState {
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  finalizers: readonly string[];
  /** status.conditions */
  conditions: readonly PodConditionState[];
  /** spec.readinessGates[].conditionType */
  readinessGates: readonly string[];
  /** metadata.deletionTimestamp is set */
  deleting: boolean;
}

/** A condition's status as the protocol reads it: anything but True or False is Unknown. */
export function toConditionStatus(s: string): ConditionStatus {
  return s === 'True' || s === 'False' ? s : 'Unknown';
}

export function podStateFromV1Pod(pod: V1Pod): PodState {
  return {
    labels: { ...(pod.metadata?.labels ?? {}) },
    annotations: { ...(pod.metadata?.annotations ?? {}) },
    finalizers: [...(pod.metadata?.finalizers ?? [])],
    conditions: (pod.status?.conditions ?? []).map((c) => ({ type: c.type, status: toConditionStatus(c.status) })),
    readinessGates: (pod.spec?.readinessGates ?? []).map((g) => g.conditionType),
    deleting: pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null,
  };
}

/** A Pod state with every field defaulted, for tests and for callers that only know the metadata. */
export function podState(partial: Partial<PodState> = {}): PodState {
  return {
    labels: partial.labels ?? {},
    annotations: partial.annotations ?? {},
    finalizers: partial.finalizers ?? [],
    conditions: partial.conditions ?? [],
    readinessGates: partial.readinessGates ?? [],
    deleting: partial.deleting ?? false,
  };
}

export function isControlled(labels: Readonly<Record<string, string>>): boolean {
  return labels[CONTROL_LABEL] === CONTROL_LABEL_VALUE;
}

export function conditionStatus(pod: Pick<PodState, 'conditions'>, type: string): ConditionStatus | undefined {
  // Last one wins, as in kuperator's lookup, should a writer ever have duplicated the type.
  let found: ConditionStatus | undefined;
  for (const c of pod.conditions) if (c.type === type) found = c.status;
  return found;
}

export function isPodReady(pod: Pick<PodState, 'conditions'>): boolean {
  return conditionStatus(pod, 'Ready') === 'True';
}

export function serviceReadyStatus(pod: Pick<PodState, 'conditions'>): ConditionStatus | undefined {
  return conditionStatus(pod, SERVICE_READY_CONDITION);
}

export function hasServiceReadyGate(pod: Pick<PodState, 'readinessGates'>): boolean {
  return pod.readinessGates.includes(SERVICE_READY_CONDITION);
}

export function protectionFinalizers(finalizers: readonly string[]): string[] {
  return finalizers.filter((f) => f.startsWith(PROTECTION_FINALIZER_PREFIX));
}
