import { createHash } from 'node:crypto';
import type { EventRequest } from './event-request.js';

/**
 * The three correlation keys of client-go's core/v1 recorder, built from the same fields
 * (tools/record/events_cache.go). They are JSON arrays rather than plain concatenations so two
 * different field splits can never produce the same key.
 */

/** The involved object's identity in client-go's field order; fieldPath only where the key includes it. */
function involved(r: EventRequest, withFieldPath: boolean): string[] {
  const o = r.involvedObject;
  return [o.kind, o.namespace ?? '', o.name, ...(withFieldPath ? [o.fieldPath ?? ''] : []), o.uid ?? '', o.apiVersion];
}

/** Identical events: source, involved object incl. fieldPath, type, reason, message. */
export function eventKey(r: EventRequest): string {
  return JSON.stringify(['event', r.source, ...involved(r, true), r.type, r.reason, r.message]);
}

/**
 * Similar events (all but the message): source, involved object without fieldPath, type, reason,
 * reporting controller (which the core/v1 recorder sets from the source; the instance is always empty).
 */
export function aggregateKey(r: EventRequest): string {
  return JSON.stringify(['aggregate', r.source, ...involved(r, false), r.type, r.reason, r.source]);
}

/** The spam filter's bucket: source, involved object, and type (in the key since Kubernetes 1.32). */
export function spamKey(r: EventRequest): string {
  return JSON.stringify(['spam', r.source, ...involved(r, false), r.type]);
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Short digest of a message: the aggregation record stores these, not messages of up to 32 KiB. */
export function messageDigest(message: string): string {
  return sha256Hex(message).slice(0, 16);
}

export const DEFAULT_KEY_PREFIX = 'ripple:events';

export interface CorrelationRedisKeys {
  aggregate: string;
  eventObservation: string;
  aggregateObservation: string;
  spam: string;
}

/**
 * Where the correlation state of one request lives in Redis, one small JSON string per key:
 *
 *   ripple:events:{<object>}:agg:<h(aggregateKey)>   AggregateRecord   TTL: aggregation interval (600 s)
 *   ripple:events:{<object>}:obs:<h(eventKey)>       ObservationRecord TTL: observation TTL (1 h, the API server's default --event-ttl)
 *   ripple:events:{<object>}:obs:<h(aggregateKey)>   ObservationRecord of the combined event
 *   ripple:events:{<object>}:spam:<h(spamKey)>       SpamBucket        TTL: until the bucket would be full again
 *
 * `{<object>}` is a Redis Cluster hash tag over the involved object, so the four keys of one request
 * share a slot and can be read and written in one atomic step (WATCH/MULTI/EXEC around `correlate`,
 * retried on a conflict, or a script). Expiry replaces client-go's 4096-entry LRU: a record that
 * expired reads as absent, which `correlate` also treats a stale one as.
 */
export function correlationRedisKeys(r: EventRequest, prefix = DEFAULT_KEY_PREFIX): CorrelationRedisKeys {
  const base = objectBase(r, prefix);
  const h = (key: string) => sha256Hex(key).slice(0, 32);
  return {
    aggregate: `${base}:agg:${h(aggregateKey(r))}`,
    eventObservation: `${base}:obs:${h(eventKey(r))}`,
    aggregateObservation: `${base}:obs:${h(aggregateKey(r))}`,
    spam: `${base}:spam:${h(spamKey(r))}`,
  };
}

function objectBase(r: EventRequest, prefix: string): string {
  const o = r.involvedObject;
  const object = sha256Hex(JSON.stringify([o.apiVersion, o.kind, o.namespace ?? '', o.name, o.uid ?? ''])).slice(0, 16);
  return `${prefix}:{${object}}`;
}

/**
 * Where the handler remembers that the request with this id was correlated, and what it decided. In
 * the same hash tag as the request's correlation keys, so the check and the state write are one
 * atomic step even on Redis Cluster.
 */
export function requestMarkerKey(r: EventRequest, requestId: string, prefix = DEFAULT_KEY_PREFIX): string {
  return `${objectBase(r, prefix)}:done:${sha256Hex(requestId).slice(0, 32)}`;
}
