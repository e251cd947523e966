import type { SpamBucket } from './state.js';

/** Float slack so a bucket refilled to exactly one token in many small steps still pays out. */
const EPSILON = 1e-9;

export interface SpamOutcome {
  bucket: SpamBucket;
  allowed: boolean;
}

/**
 * client-go's EventSourceObjectSpamFilter: a token bucket that starts full (`burst` tokens) and
 * refills continuously, one token per `refillIntervalMs`, capped at `burst`. Each event takes one
 * token; with none left the event is dropped. A clock that steps backwards refills nothing.
 */
export function takeToken(
  previous: SpamBucket | null,
  nowMs: number,
  options: { spamBurst: number; spamRefillIntervalMs: number },
): SpamOutcome {
  const lastMs = previous === null ? nowMs : Math.max(previous.lastMs, nowMs);
  const refilled =
    previous === null
      ? options.spamBurst
      : Math.min(options.spamBurst, previous.tokens + Math.max(0, nowMs - previous.lastMs) / options.spamRefillIntervalMs);
  if (refilled >= 1 - EPSILON) return { bucket: { tokens: Math.max(0, refilled - 1), lastMs }, allowed: true };
  return { bucket: { tokens: refilled, lastMs }, allowed: false };
}

/** How long until the bucket is full again, after which its record equals a fresh one and may expire. */
export function msUntilFull(bucket: SpamBucket, nowMs: number, options: { spamBurst: number; spamRefillIntervalMs: number }): number {
  const missing = Math.max(0, options.spamBurst - bucket.tokens);
  return Math.max(0, Math.ceil(bucket.lastMs + missing * options.spamRefillIntervalMs - nowMs));
}
