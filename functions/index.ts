import type { FunctionDefinition } from '../runtime/function.js';
import { definition as emitEvents } from './emit-events/definition.js';
import { definition as opsLifecycle } from './ops-lifecycle/definition.js';
import { definition as reconcileAutoscaler } from './reconcile-autoscaler/definition.js';
import { definition as reconcileModelServing } from './reconcile-modelserving/definition.js';

/** Every function Ripple can run. The CLI's --functions flag picks among these by name. */
export function allFunctions(): FunctionDefinition[] {
  return [opsLifecycle(), emitEvents(), reconcileModelServing(), reconcileAutoscaler()];
}
