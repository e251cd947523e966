import type { RedisClient } from '../queue/connection.js';
import type { StateWriter } from '../queue/fenced-write.js';
import { z } from 'zod';
import { parseJson, sortedJson } from '../kube/json.js';
import { ConditionStatusSchema } from './schema.js';
import { runScript } from '../queue/run-script.js';

/*
 * Condition-transition Events, sent at least once. The status is the record and lives in the API
 * server; the Events announcing its transitions go through emit-events, via Redis. The two cannot be
 * written atomically, so each transition is saved here before the status write and removed once its
 * Event is queued; a reconcile that died in between, or whose emit failed, leaves it here and the
 * next reconcile of the object sends it — the same outbox the ModelServing role datastore keeps.
 *
 * An entry says which condition state it announces (type, status, lastTransitionTime). It is sent
 * only when the object, read fresh, shows exactly that: a status write that lost its 409 never
 * happened, and its saved entry is dropped instead of announcing something that is not so.
 */

export const pendingTransitionSchema = z.object({
  /** The object's uid when it was written: a namesake created later inherits nothing. */
  uid: z.string().optional(),
  // `reason` only for an Event about a reason change (write.ts ConditionEvent): its status and
  // lastTransitionTime may not move, so they alone cannot tell whether that write landed.
  condition: z.object({ type: z.string(), status: ConditionStatusSchema, lastTransitionTime: z.string(), reason: z.string().optional() }),
  event: z.object({ type: z.enum(['Normal', 'Warning']), reason: z.string(), message: z.string() }),
});
export type PendingTransition = z.infer<typeof pendingTransitionSchema>;

export interface TransitionOutbox {
  /** The entries waiting to be sent. */
  load(): Promise<PendingTransition[]>;
  /** Saves entries; one pending per condition type, so a newer transition replaces an older one. */
  save(entries: readonly PendingTransition[]): Promise<void>;
  /** Removes an entry if it is still the one given (a newer one saved meanwhile stays). */
  remove(entry: PendingTransition): Promise<void>;
}

/**
 * An object deleted with entries pending must not leave its key behind for good; a day outlasts
 * any resync interval, i.e. any wait for the next reconcile that would send them.
 */
const OUTBOX_TTL_SECONDS = 86_400;

/** The outbox's key, among the writing function's state (its queue's hash tag: ctx.state.key). */
export function transitionOutboxKey(state: Pick<StateWriter, 'key'>, object: { apiVersion: string; kind: string; namespace?: string; name: string }): string {
  return state.key(`status-events:${object.apiVersion}/${object.kind}/${object.namespace ?? ''}/${object.name}`);
}

const REMOVE_IF_SAME = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0`;

/** The outbox of one object: a Redis hash, field = condition type, value = the entry as sorted JSON. */
/** Read with the client; saved through the reconcile's fenced state writer, so a stale holder saves nothing. */
export function redisTransitionOutbox(redis: RedisClient, state: StateWriter, key: string): TransitionOutbox {
  return {
    async load() {
      const out: PendingTransition[] = [];
      for (const text of Object.values(await redis.hgetall(key))) {
        // Unreadable entries (another version's) are skipped; the TTL takes them away.
        const parsed = pendingTransitionSchema.safeParse(parseJson(text));
        if (parsed.success) out.push(parsed.data);
      }
      return out;
    },
    async save(entries) {
      if (entries.length === 0) return;
      const fields = entries.flatMap((e) => [e.condition.type, sortedJson(e)]);
      await state.write([
        { command: 'HSET', key, args: fields },
        { command: 'EXPIRE', key, args: [OUTBOX_TTL_SECONDS] },
      ]);
    },
    async remove(entry) {
      await runScript(redis, REMOVE_IF_SAME, [key], [entry.condition.type, sortedJson(entry)]);
    },
  };
}

/** Whether the status read shows the condition state the entry announces. */
export function transitionLanded(
  entry: PendingTransition,
  uid: string | undefined,
  conditions: ReadonlyArray<{ type: string; status: string; lastTransitionTime: string; reason?: string }> | undefined,
): boolean {
  if (entry.uid !== undefined && uid !== undefined && entry.uid !== uid) return false;
  const c = conditions?.find((x) => x.type === entry.condition.type);
  if (c === undefined || c.status !== entry.condition.status || c.lastTransitionTime !== entry.condition.lastTransitionTime) return false;
  return entry.condition.reason === undefined || c.reason === entry.condition.reason;
}
