import type { EventRequest as EmittedRequest } from '../../../runtime/events.js';

/**
 * What the correlator reads of an emitted request (runtime/events.ts, the one schema every function
 * emits with, validated there): everything but the delivery fields `id` and `at`, which the handler
 * uses for idempotency and as the clock. No `source.host`: it would be part of every correlation key,
 * and a per-pod host would make replicas count separately, so Events carry an empty reportingInstance.
 */
export type EventRequest = Omit<EmittedRequest, 'id' | 'at'>;

/** core/v1 ObjectReference, as far as Events use it. */
export type ObjectReference = EventRequest['involvedObject'];

/** The core/v1 Event body to create. */
export interface CoreEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string; host?: string };
  reportingComponent: string;
  reportingInstance: string;
  action?: string;
  related?: NonNullable<EventRequest['related']>;
}

export function eventNamespace(request: EventRequest): string {
  const ns = request.involvedObject.namespace;
  return ns === undefined || ns === '' ? 'default' : ns;
}

