import { z } from 'zod';

/**
 * An event request, as every function hands it to emit-events. The recorder there turns requests into
 * core/v1 Events (naming, counting, aggregation, spam filtering) with its state in Redis.
 */
export const eventRequestSchema = z.object({
  involvedObject: z.object({
    apiVersion: z.string(),
    kind: z.string(),
    namespace: z.string().optional(),
    name: z.string(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    fieldPath: z.string().optional(),
  }),
  type: z.enum(['Normal', 'Warning']),
  reason: z.string().regex(/^[A-Z][A-Za-z0-9]*$/, 'reasons are CamelCase'),
  message: z.string(),
  action: z.string().optional(),
  related: z
    .object({ apiVersion: z.string(), kind: z.string(), namespace: z.string().optional(), name: z.string(), uid: z.string().optional() })
    .optional(),
  /** Which component reports it (Event.source.component / reportingController). */
  source: z.string().default('ripple'),
  /** When it happened (epoch ms), taken by the emitter so counts and timestamps are right under queueing delay. */
  at: z.number(),
  /**
   * Unique per emitted request, set by the sink: emit-events remembers which ids it has counted, so a
   * request redelivered after a worker died is replayed, never counted twice.
   */
  id: z.string().min(1),
});
export type EventRequest = z.infer<typeof eventRequestSchema>;
export type EventRequestInput = z.input<typeof eventRequestSchema>;

/** What an emitter gives: the sink stamps `at` and `id`. */
export type EmittedEvent = Omit<EventRequestInput, 'at' | 'id'>;

export interface EventSink {
  emit(request: EmittedEvent): Promise<void>;
  /**
   * Several requests at once, in order, for one reconcile's transitions: one list append and one enqueue per
   * involved object instead of one of each per request.
   */
  emitAll(requests: readonly EmittedEvent[]): Promise<void>;
}

/** An EventSink from a function taking one request; emitAll hands them over one by one, in order. */
export function eventSinkOf(emit: (request: EmittedEvent) => Promise<void>): EventSink {
  return {
    emit,
    emitAll: async (requests) => {
      for (const r of requests) await emit(r);
    },
  };
}
