import { EMIT_EVENTS, pendingEventObjects } from '../../runtime/event-sink.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { reconcile } from './handler.js';
import { sweepStaleEventRequests } from './sweep.js';

/**
 * The event sink of every function. It watches nothing: other functions feed it through
 * `ctx.events.emit` (runtime/event-sink.ts), which appends the request to the involved object's list
 * and enqueues that object's key here, so one worker at a time writes an object's Events.
 *
 * No `primary`: there is no cluster state to level-trigger from. Its tick instead enqueues every
 * object whose request list is not empty, which rescues a request whose emitter died between pushing
 * it and enqueueing its key.
 */
export function definition(_env: NodeJS.ProcessEnv = process.env): FunctionDefinition {
  return {
    name: EMIT_EVENTS,
    triggers: [],
    reconcile,
    resyncKeys: ({ redis, prefix }) => pendingEventObjects(redis, prefix),
    sweep: sweepStaleEventRequests,
    // Each reconcile mostly waits on Redis and the API server; different objects proceed in parallel.
    concurrency: 8,
  };
}
