import type { FunctionDefinition } from '../runtime/function.js';

/** Every function Ripple can run. The CLI's --functions flag picks among these by name. */
export function allFunctions(): FunctionDefinition[] {
  return [];
}
