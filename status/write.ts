import { asRecord, sortedJson } from '../kube/json.js';
import { kubeRequest } from '../kube/raw.js';
import { apiVersionOf, objectPath, type ResourceRef } from '../kube/resources.js';
import type { HandlerContext } from '../runtime/function.js';
import { toCamelCaseReason } from './conditions.js';
import { type StateEngineInput, type StateEngineResult, computeStatus } from './engine.js';
import { type Condition, ConditionSchema, type EngineStatus, PhaseSchema } from './schema.js';
import { type PendingTransition, type TransitionOutbox, redisTransitionOutbox, transitionLanded, transitionOutboxKey } from './transition-outbox.js';
import type { ConditionTransition } from './transitions.js';

/** The object being reconciled, as read fresh in this reconcile. */
export interface StatusOwner {
  metadata: { name: string; namespace?: string; uid?: string; generation?: number; resourceVersion?: string };
  status?: unknown;
}

/**
 * Sends `status` to the object's status subresource. `resourceVersion` is the one read: the write
 * must fail with 409 if the object changed since, because the status was computed from what was read.
 */
export type StatusPatch = (status: Record<string, unknown>, resourceVersion: string | undefined) => Promise<void>;

export interface WriteStatusArgs {
  /** The resource type: where its status subresource is, and the involved object of the Events. */
  resource: ResourceRef;
  object: StatusOwner;
  /** What the reconcile observed; `previous`, `generation` and `now` come from `object` and `ctx`. */
  input: Omit<StateEngineInput, 'previous' | 'generation' | 'now'>;
  /**
   * The resource's own status fields (Kthena's replicas, WVA's desiredOptimizedAlloc), written
   * beside the engine's. Each key replaces the previous value whole, nested objects included: a
   * nested key the new value lacks is removed (`null` at the top removes the field; a `null` or
   * `undefined` member further down is absent, as a merge patch cannot store one). Keys not named
   * here are left as they are. `phase`, `observedGeneration` and `conditions` are the engine's and
   * cannot be set here.
   */
  fields?: Record<string, unknown>;
  /** The Events' source component, e.g. `modelserving-controller`. */
  source: string;
  /** Overrides how status is sent (default: a merge patch of the status subresource through `ctx.kc`). */
  patch?: StatusPatch;
  /** Overrides where transitions wait for their Events (default: a hash in Redis per object). */
  outbox?: TransitionOutbox;
  /**
   * Events the engine's transitions do not cover, each announcing that this write gives a condition
   * a reason it did not have in the status read (an upstream condition whose polarity the engine does
   * not know, e.g. Kthena's Progressing=False/ProgressDeadlineExceeded). Sent like the transitions:
   * saved before the write, at least once after it, never for a write that did not land.
   */
  conditionEvents?: readonly ConditionEvent[];
}

export interface ConditionEvent {
  /** The condition type; one pending Event per type, so it must be one the engine does not announce. */
  condition: string;
  /** Announced when the written condition has this reason and the status read did not. */
  reason: string;
  event: { type: 'Normal' | 'Warning'; reason: string; message: string };
}

export interface WriteStatusResult extends StateEngineResult {
  /** Whether a status write was sent (false when nothing changed). */
  written: boolean;
  /** Transition Events that could not be queued and wait in the outbox for the next reconcile. */
  eventsPending: number;
}

const ENGINE_KEYS = new Set(['phase', 'observedGeneration', 'conditions']);

/**
 * How soon to come back when Events could not be queued: their outbox is emptied by the next
 * reconcile, which must not wait for the resync tick.
 */
export const PENDING_EVENTS_RETRY_MS = 5_000;

/**
 * The engine's part of a status as read from the API server. Field by field: one unreadable
 * condition (written by an older version, or by hand) must not make the engine forget every
 * lastTransitionTime; it is dropped, and the next write leaves it out.
 */
export function readEngineStatus(status: unknown): EngineStatus | undefined {
  const record = asRecord(status);
  if (record === undefined) return undefined;
  const out: EngineStatus = {};
  const phase = PhaseSchema.safeParse(record.phase);
  if (phase.success) out.phase = phase.data;
  const generation = record.observedGeneration;
  if (typeof generation === 'number' && Number.isInteger(generation) && generation >= 0) out.observedGeneration = generation;
  if (Array.isArray(record.conditions)) {
    const seen = new Set<string>();
    const conditions: Condition[] = [];
    for (const raw of record.conditions) {
      const parsed = ConditionSchema.safeParse(raw);
      if (!parsed.success || seen.has(parsed.data.type)) continue;
      seen.add(parsed.data.type);
      conditions.push(parsed.data);
    }
    out.conditions = conditions;
  }
  return out;
}

/**
 * What the API server keeps of `value` after a merge patch: nested `null` and `undefined` members
 * are absent (RFC 7386 cannot store them), arrays are kept as sent.
 */
function asStored(value: unknown): unknown {
  const record = asRecord(value);
  if (record === undefined) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(record)) if (v !== null && v !== undefined) out[key] = asStored(v);
  return out;
}

function fieldsChanged(previous: unknown, fields: Record<string, unknown>): boolean {
  const before = asRecord(previous) ?? {};
  return Object.entries(fields).some(([key, value]) => {
    if (value === undefined) return false;
    // `null` removes a field; a field that is not there is already removed.
    if (value === null) return key in before;
    // Sorted, so the API server's field order never looks like a change.
    return sortedJson(before[key]) !== sortedJson(asStored(value));
  });
}

/**
 * The merge patch (RFC 7386) that makes `before` into exactly `after`. A merge patch merges nested
 * objects, so every key `before` has and `after` lacks is sent as `null` to be removed; otherwise a
 * `currentAllocation` cleared to `{numReplicas: 0}` would keep its old accelerator.
 */
export function wholeValuePatch(before: unknown, after: unknown): unknown {
  const a = asRecord(after);
  if (a === undefined) return after;
  const b = asRecord(before) ?? {};
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(a)) if (v !== null && v !== undefined) out[key] = wholeValuePatch(b[key], v);
  for (const key of Object.keys(b)) if (!(key in out)) out[key] = null;
  return out;
}

/** The status patch: each named field made whole over the status read, then the engine's part. */
export function statusPatchBody(current: unknown, fields: Record<string, unknown>, engine: StateEngineResult['status']): Record<string, unknown> {
  const before = asRecord(current) ?? {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    out[key] = value === null ? null : wholeValuePatch(before[key], value);
  }
  return { ...out, ...engine };
}

/** A merge patch of `<object>/status`, with the resourceVersion read as an optimistic-lock precondition. */
export function statusSubresourcePatch(ctx: Pick<HandlerContext, 'kc'>, resource: ResourceRef, object: StatusOwner): StatusPatch {
  const path = `${objectPath(resource, object.metadata.namespace, object.metadata.name)}/status`;
  return async (status, resourceVersion) => {
    const body: Record<string, unknown> = { status };
    if (resourceVersion !== undefined) body.metadata = { resourceVersion };
    await kubeRequest(ctx.kc, path, { method: 'PATCH', body, contentType: 'application/merge-patch+json' });
  };
}

/** The Event a condition transition calls for: reason from the condition, message saying which one moved. */
export function transitionEvent(t: ConditionTransition & { eventType: 'Normal' | 'Warning' }): { type: 'Normal' | 'Warning'; reason: string; message: string } {
  const head = `${t.type} is now ${t.to}`;
  return { type: t.eventType, reason: toCamelCaseReason(t.reason, t.type), message: t.message ? `${head}: ${t.message}` : head };
}

type EventContext = Pick<HandlerContext, 'events' | 'log'>;

/**
 * Queues the entries' Events (together, in order), then takes each out of the outbox; returns how many could
 * not be sent or taken out (they stay and go with the next reconcile: an Event may come twice, never not at all).
 */
async function sendPending(ctx: EventContext, outbox: TransitionOutbox, entries: readonly PendingTransition[], involvedObject: InvolvedObject, source: string): Promise<number> {
  if (entries.length === 0) return 0;
  try {
    await ctx.events.emitAll(entries.map((entry) => ({ involvedObject, ...entry.event, source })));
  } catch (err) {
    ctx.log.warn({ err: String(err), conditions: entries.map((e) => e.condition.type) }, 'transition events not queued; they stay in the outbox for the next reconcile');
    return entries.length;
  }
  let failed = 0;
  for (const entry of entries) {
    try {
      await outbox.remove(entry);
    } catch (err) {
      failed++;
      ctx.log.warn({ err: String(err), condition: entry.condition.type }, 'transition event queued but still in the outbox; the next reconcile sends it again');
    }
  }
  return failed;
}

interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

function withPendingRetry(result: WriteStatusResult): WriteStatusResult {
  if (result.eventsPending === 0) return result;
  return { ...result, requeueAfterMs: Math.min(result.requeueAfterMs ?? PENDING_EVENTS_RETRY_MS, PENDING_EVENTS_RETRY_MS) };
}

/**
 * Computes the object's status with the state engine and writes it the way every Ripple function
 * must: only when something changed, with the resourceVersion read, and then the condition
 * transitions as Events (Warning when a condition starts failing, Normal when it recovers) through
 * emit-events.
 *
 * Events are sent at least once (status/transition-outbox.ts): the transitions are saved before the
 * write and sent after it succeeded; what a reconcile could not send — it died, or queueing the Event
 * failed — the next reconcile of the object sends first, if the status read shows it happened. A
 * write that loses a conflict and is retried therefore never announces a transition that did not
 * happen. A failed Event never fails the write (the status is the record, an Event a notification
 * about it); it brings the object back after PENDING_EVENTS_RETRY_MS instead.
 *
 * The caller then honours the result: `terminal` → return without throwing (no retry loop), else
 * return `{ requeueAfterMs }` when set (the grace period's re-check).
 */
export async function writeStatus(
  ctx: Pick<HandlerContext, 'kc' | 'events' | 'now' | 'log' | 'redis' | 'state'>,
  args: WriteStatusArgs,
): Promise<WriteStatusResult> {
  const { resource, object } = args;
  const fields = args.fields ?? {};
  for (const key of Object.keys(fields)) {
    if (ENGINE_KEYS.has(key)) throw new Error(`status field ${key} belongs to the state engine; pass engine inputs instead`);
  }
  const involvedObject: InvolvedObject = {
    apiVersion: apiVersionOf(resource),
    kind: resource.kind,
    name: object.metadata.name,
    ...(object.metadata.namespace !== undefined ? { namespace: object.metadata.namespace } : {}),
    ...(object.metadata.uid !== undefined ? { uid: object.metadata.uid } : {}),
  };
  const outbox = args.outbox ?? redisTransitionOutbox(ctx.redis, ctx.state, transitionOutboxKey(ctx.state, involvedObject));
  const previous = readEngineStatus(object.status);

  // What an earlier reconcile wrote and did not get to announce; entries of a write that never
  // landed are dropped.
  const waiting = await outbox.load();
  const landed = waiting.filter((e) => transitionLanded(e, object.metadata.uid, previous?.conditions));
  for (const stale of waiting.filter((e) => !landed.includes(e))) await outbox.remove(stale);
  let eventsPending = await sendPending(ctx, outbox, landed, involvedObject, args.source);

  const result = computeStatus({
    ...args.input,
    generation: object.metadata.generation ?? 0,
    now: ctx.now(),
    previous,
  });
  if (!result.changed && !fieldsChanged(object.status, fields)) return withPendingRetry({ ...result, written: false, eventsPending });

  const entries: PendingTransition[] = [];
  for (const transition of result.transitions) {
    if (transition.eventType === undefined) continue;
    const condition = result.status.conditions.find((c) => c.type === transition.type);
    if (condition === undefined) continue;
    entries.push({
      ...(object.metadata.uid !== undefined ? { uid: object.metadata.uid } : {}),
      condition: { type: condition.type, status: condition.status, lastTransitionTime: condition.lastTransitionTime },
      event: transitionEvent({ ...transition, eventType: transition.eventType }),
    });
  }
  for (const extra of args.conditionEvents ?? []) {
    const condition = result.status.conditions.find((c) => c.type === extra.condition);
    if (condition?.reason !== extra.reason) continue;
    if (previous?.conditions?.find((c) => c.type === extra.condition)?.reason === extra.reason) continue;
    entries.push({
      ...(object.metadata.uid !== undefined ? { uid: object.metadata.uid } : {}),
      condition: { type: condition.type, status: condition.status, lastTransitionTime: condition.lastTransitionTime, reason: condition.reason },
      event: extra.event,
    });
  }
  await outbox.save(entries);

  const patch = args.patch ?? statusSubresourcePatch(ctx, resource, object);
  await patch(statusPatchBody(object.status, fields, result.status), object.metadata.resourceVersion);

  eventsPending += await sendPending(ctx, outbox, entries, involvedObject, args.source);
  return withPendingRetry({ ...result, written: true, eventsPending });
}
