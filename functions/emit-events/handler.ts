import { eventRequestsKey } from '../../runtime/event-sink.js';
import { type EventRequest, eventRequestSchema } from '../../runtime/events.js';
import type { Handler, HandlerContext, ReconcileResult } from '../../runtime/function.js';
import type { CorrelatorOptions } from './correlation/index.js';
import { correlateInRedis } from './correlation-store.js';
import { writeEvent } from './event-writer.js';

export interface EmitEventsOptions {
  /** Requests read from the object's list per round trip. */
  batchSize?: number;
  /**
   * Requests handled in one reconcile before yielding (requeue at once), so one chatty object does
   * not hold a worker slot while other objects' events wait.
   */
  maxPerReconcile?: number;
  correlator?: Partial<CorrelatorOptions>;
}

function parseRequest(raw: string): EventRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    return `not JSON: ${String(err)}`;
  }
  const parsed = eventRequestSchema.safeParse(value);
  return parsed.success ? parsed.data : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
}

async function record(request: EventRequest, ctx: HandlerContext, options: EmitEventsOptions): Promise<void> {
  const { intent, replayed, aggregated } = await correlateInRedis(ctx.redis, ctx.prefix, request, options.correlator);
  const log = ctx.log.child({ requestId: request.id, eventReason: request.reason });
  if (intent.op === 'drop') {
    log.debug({ event: intent.name, count: intent.count, replayed }, 'event over the spam budget: counted, not written');
    return;
  }
  const { outcome, detail } = await writeEvent(ctx.kc, intent);
  const fields = { event: intent.event.metadata.name, count: intent.event.count, op: intent.op, outcome, replayed, aggregated };
  if (outcome === 'rejected') log.warn({ ...fields, detail }, 'the API server refused the event; dropping it');
  else log.debug(fields, 'event written');
}

/**
 * Reconciles one involved object's pending event requests: for each, in the order they were
 * emitted, correlate (shared state in Redis) and write the Event.
 *
 * The list is read, not popped: a request leaves it (LREM of its exact text, unique by its id) only
 * once its Event is written, so a worker that dies mid-batch loses nothing; the next run replays the
 * requests already correlated from their markers instead of counting them again. LREM by value
 * rather than LTRIM by count keeps that true even if a stalled job's old holder is still running.
 */
export function makeReconcile(options: EmitEventsOptions = {}): Handler {
  const batchSize = options.batchSize ?? 50;
  const maxPerReconcile = options.maxPerReconcile ?? 1000;
  return async (req, ctx): Promise<ReconcileResult | void> => {
    const list = eventRequestsKey(ctx.prefix, req.key);
    let handled = 0;
    while (handled < maxPerReconcile) {
      const raws = await ctx.redis.lrange(list, 0, Math.min(batchSize, maxPerReconcile - handled) - 1);
      if (raws.length === 0) return;
      for (const raw of raws) {
        const request = parseRequest(raw);
        if (typeof request === 'string') ctx.log.warn({ problem: request }, 'dropping an unreadable event request');
        else await record(request, ctx, options);
        await ctx.redis.lrem(list, 1, raw);
        handled++;
      }
    }
    ctx.log.debug({ handled }, 'more event requests pending; yielding');
    return { requeueAfterMs: 0 };
  };
}

export const reconcile: Handler = makeReconcile();
