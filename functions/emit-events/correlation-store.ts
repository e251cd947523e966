import type { RedisClient } from '../../queue/connection.js';
import { z } from 'zod';
import { parseJson } from '../../kube/json.js';
import { eventRequestSchema, type EventRequest } from '../../runtime/events.js';
import { runScript } from '../../queue/run-script.js';
import {
  AggregateRecordSchema,
  type CorrelationState,
  type CorrelatorOptions,
  ObservationRecordSchema,
  SpamBucketSchema,
  correlate,
  correlationRedisKeys,
  correlationTtlsMs,
  parseRecord,
  requestMarkerKey,
  resolveOptions,
} from './correlation/index.js';

/**
 * What one request asks of the API server, once correlated. It is also what the request's marker
 * stores, so a redelivered request replays the same write instead of being counted again.
 * `patch` and `create` both carry the whole Event: each falls back to the other (404 on a patch,
 * 409 on a create), and both write absolute values, so doing one twice is harmless.
 */
export const writeIntentSchema = z.discriminatedUnion('op', [
  z.object({
    op: z.enum(['create', 'patch']),
    event: z.object({
      apiVersion: z.literal('v1'),
      kind: z.literal('Event'),
      metadata: z.object({ name: z.string().min(1), namespace: z.string().min(1) }),
      involvedObject: eventRequestSchema.shape.involvedObject,
      reason: z.string(),
      message: z.string(),
      type: z.enum(['Normal', 'Warning']),
      count: z.int().positive(),
      firstTimestamp: z.string(),
      lastTimestamp: z.string(),
      source: z.object({ component: z.string(), host: z.string().optional() }),
      reportingComponent: z.string(),
      reportingInstance: z.string(),
      action: z.string().optional(),
      related: eventRequestSchema.shape.related,
    }),
  }),
  z.object({ op: z.literal('drop'), name: z.string(), count: z.int().positive() }),
]);
export type WriteIntent = z.infer<typeof writeIntentSchema>;

export interface Correlated {
  intent: WriteIntent;
  /** The marker already existed: this request was correlated before (a redelivery). */
  replayed: boolean;
  aggregated: boolean;
}

/**
 * Compare-and-set of one request's correlation state plus its marker, in one atomic step.
 * A script instead of WATCH/MULTI because WATCH belongs to a connection, and the handler's Redis
 * connection is shared by every reconcile running in this process.
 *
 * KEYS: the four correlation records, then the request's marker.
 * ARGV: 1-4 the values read ('' = absent), 5-8 the values to write ('' = unchanged),
 *       9-12 their TTLs (ms), 13 the marker's value, 14 its TTL (ms).
 * Returns {'replay', marker} when the request was already correlated, {'conflict'} when a record
 * changed since it was read (read again and retry), {'committed'} otherwise.
 */
const COMMIT = `
local marker = redis.call('GET', KEYS[5])
if marker then return {'replay', marker} end
for i = 1, 4 do
  if (redis.call('GET', KEYS[i]) or '') ~= ARGV[i] then return {'conflict', ''} end
end
for i = 1, 4 do
  if ARGV[4 + i] ~= '' then redis.call('SET', KEYS[i], ARGV[4 + i], 'PX', ARGV[8 + i]) end
end
redis.call('SET', KEYS[5], ARGV[13], 'PX', ARGV[14])
return {'committed', ''}
`;

const commitReplySchema = z.tuple([z.enum(['replay', 'conflict', 'committed']), z.string()]);

/** Conflicts mean another request for the same object committed in between; this is plenty. */
const MAX_ATTEMPTS = 50;

const FIELDS = ['aggregate', 'eventObservation', 'aggregateObservation', 'spam'] as const;

/** Where an object's correlation records live: under the function's prefix, so tests and tenants stay apart. */
export function correlationPrefix(prefix: string): string {
  return `${prefix}:emit-events:corr`;
}

function intentOf(action: ReturnType<typeof correlate>['action']): WriteIntent {
  if (action.kind === 'drop') return { op: 'drop', name: action.name, count: action.count };
  return { op: action.kind, event: action.event };
}

/**
 * Runs client-go's correlator for one request over the state in Redis, so every replica shares one
 * recorder's memory, and records that the request was counted. The request's own timestamp (`at`,
 * taken by the emitter) is the clock: queueing delay must not change counts, windows or buckets.
 */
export async function correlateInRedis(
  redis: RedisClient,
  prefix: string,
  request: EventRequest,
  options: Partial<CorrelatorOptions> = {},
): Promise<Correlated> {
  const opts = resolveOptions(options);
  const keys = correlationRedisKeys(request, correlationPrefix(prefix));
  const marker = requestMarkerKey(request, request.id, correlationPrefix(prefix));
  const recordKeys = FIELDS.map((f) => keys[f]);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const raw = await redis.mget(...recordKeys, marker);
    const done = raw[4];
    if (done !== null && done !== undefined) return replay(done);
    const state: CorrelationState = {
      aggregate: parseRecord(AggregateRecordSchema, raw[0]),
      eventObservation: parseRecord(ObservationRecordSchema, raw[1]),
      aggregateObservation: parseRecord(ObservationRecordSchema, raw[2]),
      spam: parseRecord(SpamBucketSchema, raw[3]),
    };
    const result = correlate(request, state, request.at, opts);
    const ttls = correlationTtlsMs(result.next, request.at, opts);
    const writes = FIELDS.map((f, i) => {
      const value = result.next[f];
      if (value === null) return '';
      const json = JSON.stringify(value);
      return json === raw[i] ? '' : json;
    });
    const intent = intentOf(result.action);
    const reply = commitReplySchema.parse(
      await runScript(redis, COMMIT, [...recordKeys, marker], [
        ...raw.slice(0, 4).map((v) => v ?? ''),
        ...writes,
        ...FIELDS.map((f) => String(ttls[f] ?? 1)),
        JSON.stringify(intent),
        // As long as the Event it counts on is remembered; a redelivery comes much sooner than this.
        String(opts.observationTtlMs),
      ]),
    );
    if (reply[0] === 'committed') return { intent, replayed: false, aggregated: result.aggregated };
    if (reply[0] === 'replay') return replay(reply[1]);
  }
  throw new Error(`correlation state of ${request.involvedObject.kind} ${request.involvedObject.name} kept changing; giving up for now`);
}

function replay(raw: string): Correlated {
  const parsed = writeIntentSchema.safeParse(parseJson(raw));
  // An unreadable marker still means "already counted": counting again is the one thing not to do.
  const intent: WriteIntent = parsed.success ? parsed.data : { op: 'drop', name: '', count: 1 };
  return { intent, replayed: true, aggregated: false };
}
