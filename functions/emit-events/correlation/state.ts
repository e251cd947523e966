import { z } from 'zod';
import { parseJson } from '../../../kube/json.js';

/**
 * The correlation state of one request, as four small JSON records (see `correlationRedisKeys`).
 * Schemas, because they are read back from Redis: a record that does not parse is treated as absent.
 */

/** Similar events seen in a group (client-go's aggregateRecord), messages kept as short digests. */
export const AggregateRecordSchema = z.object({
  messages: z.array(z.string()),
  lastTimestampMs: z.number(),
});
export type AggregateRecord = z.infer<typeof AggregateRecordSchema>;

/** One Event object being counted (client-go's eventLog). */
export const ObservationRecordSchema = z.object({
  name: z.string().min(1),
  count: z.int().positive(),
  firstTimestampMs: z.number(),
  lastTimestampMs: z.number(),
});
export type ObservationRecord = z.infer<typeof ObservationRecordSchema>;

/** A token bucket (client-go's per source+object+type rate limiter). */
export const SpamBucketSchema = z.object({
  tokens: z.number().nonnegative(),
  lastMs: z.number(),
});
export type SpamBucket = z.infer<typeof SpamBucketSchema>;

export const CorrelationStateSchema = z.object({
  aggregate: AggregateRecordSchema.nullable(),
  eventObservation: ObservationRecordSchema.nullable(),
  aggregateObservation: ObservationRecordSchema.nullable(),
  spam: SpamBucketSchema.nullable(),
});
export type CorrelationState = z.infer<typeof CorrelationStateSchema>;

export const EMPTY_CORRELATION_STATE: CorrelationState = {
  aggregate: null,
  eventObservation: null,
  aggregateObservation: null,
  spam: null,
};

/** client-go's defaults (NewEventCorrelator), plus how long a counted Event is remembered. */
export interface CorrelatorOptions {
  /** Distinct messages in a group that trigger aggregation. */
  aggregateMaxEvents: number;
  /** A gap longer than this since a group's last event starts the group afresh. */
  aggregateIntervalMs: number;
  spamBurst: number;
  /** One token comes back per this interval (client-go: qps 1/300). */
  spamRefillIntervalMs: number;
  /**
   * How long after its last occurrence an Event is still counted rather than re-created. client-go
   * keeps it until the LRU evicts it; we match the API server's default --event-ttl, past which the
   * Event object is gone anyway (a PATCH would 404 and fall back to a create).
   */
  observationTtlMs: number;
}

export const DEFAULT_CORRELATOR_OPTIONS: CorrelatorOptions = {
  aggregateMaxEvents: 10,
  aggregateIntervalMs: 600_000,
  spamBurst: 25,
  spamRefillIntervalMs: 300_000,
  observationTtlMs: 3_600_000,
};

/** Parses one record read from Redis (JSON text or null); anything unreadable counts as absent. */
export function parseRecord<T>(schema: z.ZodType<T>, raw: string | null | undefined): T | null {
  if (raw === null || raw === undefined) return null;
  const parsed = schema.safeParse(parseJson(raw));
  return parsed.success ? parsed.data : null;
}
