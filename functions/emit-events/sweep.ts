/**
 * emit-events' sweep: its state is bounded by age, not by whether the involved objects exist.
 *
 * - An Event about a deleted object is still right to write (a deletion is usually announced as it
 *   happens, and Kubernetes keeps Events after their object until the event TTL), so a pending request
 *   must not be dropped because its object is gone; the handler drains such lists like any other, and
 *   drops a request the API server refuses for good (namespace gone or terminating).
 * - The involved object may be of any kind, so asking whether it exists would need discovery per kind.
 * - The correlation records and request markers all carry a TTL (set in the commit script, at most
 *   the observation TTL, 1 h), so they go by themselves.
 *
 * What could stay forever is a request the handler never manages to write (the API server answering
 * 5xx or 429 for it on every retry): this sweep removes requests older than
 * EMIT_EVENTS_MAX_REQUEST_AGE_MS (default 1 h, the API server's default --event-ttl: such an Event
 * would be garbage-collected as soon as it was written), and unreadable ones (the handler drops those
 * too). Removal is LREM of the exact text, so a handler writing the same request meanwhile is
 * unharmed (its own LREM then removes nothing), and a fresh request is never old enough to go.
 */
import { z } from 'zod';
import { eventRequestsKey, pendingEventObjects } from '../../runtime/event-sink.js';
import type { SweepContext } from '../../runtime/function.js';

const envSchema = z.object({
  EMIT_EVENTS_MAX_REQUEST_AGE_MS: z.coerce.number().int().positive().default(3_600_000),
});

const requestAgeSchema = z.object({ at: z.number() });

/** Epoch ms of a request, or undefined when it cannot be read. */
function requestTime(raw: string): number | undefined {
  try {
    const parsed = requestAgeSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data.at : undefined;
  } catch {
    return undefined;
  }
}

export async function sweepStaleEventRequests(ctx: SweepContext): Promise<number> {
  const { EMIT_EVENTS_MAX_REQUEST_AGE_MS: maxAgeMs } = envSchema.parse(ctx.env);
  const cutoff = Date.now() - maxAgeMs;
  let removed = 0;
  for (const object of await pendingEventObjects(ctx.redis, ctx.prefix)) {
    const list = eventRequestsKey(ctx.prefix, object);
    let stale = 0;
    for (const raw of await ctx.redis.lrange(list, 0, -1)) {
      const at = requestTime(raw);
      if (at !== undefined && at >= cutoff) continue;
      stale += await ctx.redis.lrem(list, 1, raw);
    }
    if (stale > 0) ctx.log.warn({ object, requests: stale, maxAgeMs }, 'dropped event requests that could not be written within their maximum age');
    removed += stale;
  }
  return removed;
}
