import type { IdLabels } from './id-map.js';

/**
 * Where one lifecycle ID stands, read from the furthest label it carries.
 * - `begun`: the operator wrote operating+type; pre-check not yet added.
 * - `undoing`: an undo-operation-type label asks for every label of the ID to go.
 * - `abandoned`: labels left without operating and before operate (an operator finished or was
 *   cleaned up early, or a stray type label); they are removed like an undo.
 */
export type LifecycleStage =
  | 'begun'
  | 'pre-check'
  | 'pre-checked'
  | 'preparing'
  | 'operate'
  | 'operated'
  | 'post-check'
  | 'post-checked'
  | 'completing'
  | 'undoing'
  | 'abandoned';

/** The phases of the PodOpsLifecycle documentation. */
export type LifecyclePhase = 'Preparing' | 'Operating' | 'Completing';

/**
 * A Pod's phase: the least advanced of its live IDs, or, with none, whether it is serving
 * (`ServiceAvailable`) or not (`NotServiceAvailable`: not Ready yet, stay-offline, or expected finalizers missing).
 */
export type PodLifecyclePhase = 'ServiceAvailable' | 'NotServiceAvailable' | LifecyclePhase;

export function stageOf(l: IdLabels): LifecycleStage {
  if (l.undoOperationType !== undefined) return 'undoing';
  if (l.completing !== undefined) return 'completing';
  if (l.postChecked !== undefined) return 'post-checked';
  if (l.postCheck !== undefined) return 'post-check';
  if (l.operated !== undefined) return 'operated';
  if (l.operate !== undefined) return 'operate';
  if (l.operating === undefined) return 'abandoned';
  if (l.preparing !== undefined) return 'preparing';
  if (l.preChecked !== undefined) return 'pre-checked';
  if (l.preCheck !== undefined) return 'pre-check';
  return 'begun';
}

export function isLive(stage: LifecycleStage): boolean {
  return stage !== 'undoing' && stage !== 'abandoned';
}

export function phaseOf(stage: LifecycleStage): LifecyclePhase | undefined {
  switch (stage) {
    case 'begun':
    case 'pre-check':
    case 'pre-checked':
    case 'preparing':
      return 'Preparing';
    case 'operate':
    case 'operated':
      return 'Operating';
    case 'post-check':
    case 'post-checked':
    case 'completing':
      return 'Completing';
    case 'undoing':
    case 'abandoned':
      return undefined;
  }
}

/**
 * Stages during which the Pod must be out of service: from the moment the lifecycle is allowed to take the
 * Pod (pre-checked) until its cooperation controllers are asked to bring it back (completing). Holding the
 * gate False through operate/operated/post-check — kuperator only reacts to the preparing label — is what
 * stops the gate flapping back to True while one ID completes and another is being operated (#248).
 */
export function requiresOffline(stage: LifecycleStage): boolean {
  return (
    stage === 'pre-checked' ||
    stage === 'preparing' ||
    stage === 'operate' ||
    stage === 'operated' ||
    stage === 'post-check' ||
    stage === 'post-checked'
  );
}

const PHASE_RANK: Record<LifecyclePhase, number> = { Preparing: 0, Operating: 1, Completing: 2 };

export function leastAdvanced(phases: Iterable<LifecyclePhase>): LifecyclePhase | undefined {
  let best: LifecyclePhase | undefined;
  for (const p of phases) if (best === undefined || PHASE_RANK[p] < PHASE_RANK[best]) best = p;
  return best;
}
