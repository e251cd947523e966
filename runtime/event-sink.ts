import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../queue/connection.js';
import { scanKeys } from '../queue/scan.js';
import type { WorkQueue } from '../queue/work-queue.js';
import { eventRequestSchema, type EventSink } from './events.js';

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
): EventSink {
  return {
    async emit(input) {
      const request = eventRequestSchema.parse({ ...input, at: now(), id: randomUUID() });
      const { namespace, name, kind } = request.involvedObject;
      // BullMQ rejects job ids with ':', and a few object names have one (system:… RBAC objects).
      const objectKey = `${namespace ?? ''}/${kind}/${name}`.replaceAll(':', '%3A');
      const list = eventRequestsKey(prefix, objectKey);
      const replies = await redis.multi().rpush(list, JSON.stringify(request)).ltrim(list, 0, maxPending - 1).exec();
      const failed = replies?.find(([err]) => err !== null)?.[0];
      if (failed) throw failed;
      await queue().add(objectKey, 0, 'event-request');
    },
  };
}
