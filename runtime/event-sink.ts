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
 * Hands event requests to emit-events: each request is appended to a list per involved object, and the
 * object's key goes on emit-events' keyed queue. The keyed queue makes one worker at a time the writer
 * for an object's Events (so counts are never raced), while the list keeps every request: coalescing
 * the queue never coalesces the events themselves.
 */
export function queueEventSink(redis: RedisClient, prefix: string, queue: () => WorkQueue, now: () => number = Date.now): EventSink {
  return {
    async emit(input) {
      const request = eventRequestSchema.parse({ ...input, at: now(), id: randomUUID() });
      const { namespace, name, kind } = request.involvedObject;
      // BullMQ rejects job ids with ':', and a few object names have one (system:… RBAC objects).
      const objectKey = `${namespace ?? ''}/${kind}/${name}`.replaceAll(':', '%3A');
      await redis.rpush(eventRequestsKey(prefix, objectKey), JSON.stringify(request));
      await queue().add(objectKey, 0, 'event-request');
    },
  };
}
