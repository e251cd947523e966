import { randomUUID } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import type { RedisClient } from '../queue/connection.js';
import { scanKeys } from '../queue/scan.js';
import type { WorkQueue } from '../queue/work-queue.js';
import { eventRequestSchema, type EmittedEvent, type EventRequest, type EventSink } from './events.js';
import type { Logger } from '../base/log.js';

export const EMIT_EVENTS = 'emit-events';

/** Where pending event requests for one involved object wait for emit-events. */
export function eventRequestsKey(prefix: string, objectKey: string): string {
  return `${prefix}:${EMIT_EVENTS}:requests:${objectKey}`;
}

/**
 * The objects whose requests are still waiting: emit-events' resync. A request is pushed before its
 * key is enqueued, so an emitter that dies between the two leaves a list nobody was told about; the
 * tick finds it. Lists are removed when drained, so this scans only what is pending.
 */
export async function pendingEventObjects(redis: RedisClient, prefix: string): Promise<string[]> {
  const head = eventRequestsKey(prefix, '');
  // Every primary of a cluster: the lists spread over slots.
  return (await scanKeys(redis, `${head}*`)).map((key) => key.slice(head.length));
}

/**
 * Requests that may wait on one object's list (issue 13 item 9). While emit-events cannot write an
 * object's Events (the API server refusing them with 5xx, no worker running), its list would otherwise
 * grow without bound until the sweep's age limit; past this many, new requests are dropped, as
 * client-go's broadcaster drops events when its queue (also 1000) is full.
 */
export const MAX_PENDING_EVENT_REQUESTS = 1000;

export const DROPPED_EVENT_REQUESTS_METRIC = 'ripple_event_requests_dropped_total';

/** Where a request dropped over the cap is reported: the emitter is not failed for it (see below). */
export interface EventSinkReporting {
  log?: Logger;
  /** Counts drops as `ripple_event_requests_dropped_total{kind}`, registered on first use. */
  registry?: Registry;
}

/** The registry's drop counter; one per registry, found by name (no module state). */
function droppedCounter(registry: Registry): Counter<'kind'> {
  const existing = registry.getSingleMetric(DROPPED_EVENT_REQUESTS_METRIC);
  if (existing instanceof Counter) return existing as Counter<'kind'>;
  return new Counter({
    name: DROPPED_EVENT_REQUESTS_METRIC,
    help: 'Event requests dropped because the involved object already had the maximum number of requests waiting for emit-events',
    labelNames: ['kind'],
    registers: [registry],
  });
}

/**
 * Hands event requests to emit-events: each request is appended to a list per involved object, and the
 * object's key goes on emit-events' keyed queue. The keyed queue makes one worker at a time the writer
 * for an object's Events (so counts are never raced), while the list keeps every request: coalescing
 * the queue never coalesces the events themselves. A list holds at most `maxPending` requests, the
 * oldest (RPUSH and LTRIM in one transaction, so concurrent emitters never overshoot it).
 */
export function queueEventSink(
  redis: RedisClient,
  prefix: string,
  queue: () => WorkQueue,
  now: () => number = Date.now,
  maxPending = MAX_PENDING_EVENT_REQUESTS,
  reporting: EventSinkReporting = {},
): EventSink {
  const dropped = reporting.registry ? droppedCounter(reporting.registry) : undefined;
  /** Appends one object's requests to its list and enqueues it once. */
  const append = async (objectKey: string, requests: readonly EventRequest[]): Promise<void> => {
    const list = eventRequestsKey(prefix, objectKey);
    const replies = await redis
      .multi()
      .rpush(list, ...requests.map((r) => JSON.stringify(r)))
      .ltrim(list, 0, maxPending - 1)
      .exec();
    const failed = replies?.find(([err]) => err !== null)?.[0];
    if (failed) throw failed;
    // RPUSH answers the list's new length: past the cap, LTRIM just dropped the newest of these requests. The
    // caller (e.g. the status outbox) takes them as queued: an Event is a notification, and failing the emit
    // would only retry into the same full list. So it is said here, where an operator looks.
    const length = replies?.[0]?.[1];
    const over = typeof length === 'number' ? Math.min(requests.length, length - maxPending) : 0;
    if (over > 0) {
      const { namespace, name, kind } = requests[0]?.involvedObject ?? { name: objectKey, kind: '' };
      dropped?.inc({ kind }, over);
      for (const request of requests.slice(requests.length - over)) {
        reporting.log?.warn(
          { involvedObject: { namespace, kind, name }, type: request.type, reason: request.reason, message: request.message, pending: length, cap: maxPending },
          'event request dropped: this object already has the maximum number of requests waiting for emit-events',
        );
      }
    }
    await queue().add(objectKey, 0, 'event-request');
  };
  const emitAll = async (inputs: readonly EmittedEvent[]): Promise<void> => {
    const byObject = new Map<string, EventRequest[]>();
    for (const input of inputs) {
      const request = eventRequestSchema.parse({ ...input, at: now(), id: randomUUID() });
      const { namespace, name, kind } = request.involvedObject;
      // BullMQ rejects job ids with ':', and a few object names have one (system:… RBAC objects).
      const objectKey = `${namespace ?? ''}/${kind}/${name}`.replaceAll(':', '%3A');
      byObject.set(objectKey, [...(byObject.get(objectKey) ?? []), request]);
    }
    for (const [objectKey, requests] of byObject) await append(objectKey, requests);
  };
  return { emit: (input) => emitAll([input]), emitAll };
}
