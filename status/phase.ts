import type { Phase } from './schema.js';

/**
 * Severity order, worst first. NotAvailable ranks worse than Degraded (as aim-engine's code does,
 * against its own doc): Degraded is something that worked and may heal by itself, NotAvailable is
 * a resource this cluster cannot serve at all (no matching GPU) until someone changes the cluster.
 * Pending ranks worse than Starting: nothing is progressing yet.
 */
const SEVERITY: readonly Phase[] = ['Failed', 'NotAvailable', 'Degraded', 'Pending', 'Starting', 'Ready'];

export function phaseSeverity(phase: Phase): number {
  return SEVERITY.indexOf(phase);
}

/** The worst of the given phases; `Ready` for none (nothing tracked is nothing broken). */
export function worstPhase(phases: Iterable<Phase>): Phase {
  let worst: Phase = 'Ready';
  for (const phase of phases) if (phaseSeverity(phase) < phaseSeverity(worst)) worst = phase;
  return worst;
}

/** Phases after which a connectivity problem can degrade the resource (seed 002 §2.2 4). */
export function canDegradeFrom(previous: Phase | undefined): boolean {
  return previous === 'Starting' || previous === 'Ready' || previous === 'Degraded';
}

/** Phases kstatus should read as Failed: the controller cannot progress without outside change. */
export function isStalledPhase(phase: Phase): boolean {
  return phase === 'Failed' || phase === 'NotAvailable';
}

/** Phases that mean something is wrong, as opposed to still on its way (Pending, Starting). */
export function isFailingPhase(phase: Phase): boolean {
  return phase === 'Failed' || phase === 'Degraded' || phase === 'NotAvailable';
}
