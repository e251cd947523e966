/**
 * Condition types and reasons the state engine writes. They are API: users' `kubectl wait`,
 * alerts and Flux/Argo health checks match on them, so they change only with a migration note.
 */

/** Parent conditions (seed 002 §2.2); all positive polarity: True is healthy. */
export const ConditionType = {
  Ready: 'Ready',
  ConfigValid: 'ConfigValid',
  AuthValid: 'AuthValid',
  DependenciesReachable: 'DependenciesReachable',
  /**
   * kstatus's abnormal-true condition. Without it kstatus reads `Ready=False` as InProgress forever,
   * so a Failed resource would never read as Failed to Flux or `kubectl` apply-time waits.
   */
  Stalled: 'Stalled',
} as const;

export const PARENT_CONDITION_TYPES: readonly string[] = [
  ConditionType.Ready,
  ConditionType.ConfigValid,
  ConditionType.AuthValid,
  ConditionType.DependenciesReachable,
];

/** `{Child}Ready` (seed 002 §2.1). */
export const CHILD_CONDITION_SUFFIX = 'Ready';

export const Reason = {
  // Ready=True
  AllComponentsReady: 'AllComponentsReady',
  // ConfigValid
  ConfigurationValid: 'ConfigurationValid',
  InvalidSpec: 'InvalidSpec',
  ReferenceNotFound: 'ReferenceNotFound',
  // AuthValid
  AuthenticationValid: 'AuthenticationValid',
  AuthFailed: 'AuthFailed',
  // DependenciesReachable
  Reachable: 'Reachable',
  DependenciesUnreachable: 'DependenciesUnreachable',
  // capacity (seed 002 §3.4)
  InsufficientCapacity: 'InsufficientCapacity',
  // a child whose health could not be evaluated (seed 002 §3.3)
  Unknown: 'Unknown',
} as const;
export type ReasonName = (typeof Reason)[keyof typeof Reason];
