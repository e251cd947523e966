import { EMIT_EVENTS } from '../../runtime/event-sink.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { reconcile } from './handler.js';

/**
 * The event sink of every function. It watches nothing: other functions feed it through
 * `ctx.events.emit` (runtime/event-sink.ts), which appends the request to the involved object's list
 * and enqueues that object's key here, so one worker at a time writes an object's Events.
 *
 * No `primary`, hence no resync tick: there is no cluster state to level-trigger from. A request is
 * on its list before its key is enqueued, and a reconcile drains the whole list, so the only request
 * a tick could rescue is one whose emitter died between those two steps; it is written with the next
 * request about the same object.
 */
export function definition(_env: NodeJS.ProcessEnv = process.env): FunctionDefinition {
  return {
    name: EMIT_EVENTS,
    triggers: [],
    reconcile,
    // Each reconcile mostly waits on Redis and the API server; different objects proceed in parallel.
    concurrency: 8,
  };
}
