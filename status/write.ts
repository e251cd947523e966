import { kubeRequest } from '../kube/raw.js';
import { apiVersionOf, objectPath, type ResourceRef } from '../kube/resources.js';
import type { HandlerContext } from '../runtime/function.js';
import { toCamelCaseReason } from './conditions.js';
import { type StateEngineInput, type StateEngineResult, computeStatus } from './engine.js';
import { type Condition, ConditionSchema, type EngineStatus, PhaseSchema } from './schema.js';
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
   * beside the engine's. Each key replaces the previous value whole (JSON merge patch; `null`
   * removes it); keys not named here are left as they are. `phase`, `observedGeneration` and
   * `conditions` are the engine's and cannot be set here.
   */
  fields?: Record<string, unknown>;
  /** The Events' source component, e.g. `modelserving-controller`. */
  source: string;
  /** Overrides how status is sent (default: a merge patch of the status subresource through `ctx.kc`). */
  patch?: StatusPatch;
}

export interface WriteStatusResult extends StateEngineResult {
  /** Whether a status write was sent (false when nothing changed). */
  written: boolean;
}

const ENGINE_KEYS = new Set(['phase', 'observedGeneration', 'conditions']);

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

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

/** JSON with sorted keys, so the API server's field order never looks like a change. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    const record = asRecord(v);
    if (record === undefined) return v;
    return Object.fromEntries(Object.keys(record).sort().map((k) => [k, record[k]]));
  });
}

function fieldsChanged(previous: unknown, fields: Record<string, unknown>): boolean {
  const before = asRecord(previous) ?? {};
  return Object.entries(fields).some(([key, value]) => {
    // `null` removes a field; a field that is not there is already removed.
    if (value === null) return key in before;
    return canonical(before[key]) !== canonical(value);
  });
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

/**
 * Computes the object's status with the state engine and writes it the way every Ripple function
 * must: only when something changed, with the resourceVersion read, and then the condition
 * transitions as Events (Warning when a condition starts failing, Normal when it recovers) through
 * emit-events.
 *
 * Events go out after the write succeeded, so a write that loses a conflict and is retried never
 * announces a transition twice. If emitting fails the status stays written and the failure is only
 * logged: the status is the record, an Event is a notification about it.
 *
 * The caller then honours the result: `terminal` → return without throwing (no retry loop), else
 * return `{ requeueAfterMs }` when set (the grace period's re-check).
 */
export async function writeStatus(
  ctx: Pick<HandlerContext, 'kc' | 'events' | 'now' | 'log'>,
  args: WriteStatusArgs,
): Promise<WriteStatusResult> {
  const { resource, object } = args;
  const fields = args.fields ?? {};
  for (const key of Object.keys(fields)) {
    if (ENGINE_KEYS.has(key)) throw new Error(`status field ${key} belongs to the state engine; pass engine inputs instead`);
  }
  const result = computeStatus({
    ...args.input,
    generation: object.metadata.generation ?? 0,
    now: ctx.now(),
    previous: readEngineStatus(object.status),
  });
  if (!result.changed && !fieldsChanged(object.status, fields)) return { ...result, written: false };

  const patch = args.patch ?? statusSubresourcePatch(ctx, resource, object);
  await patch({ ...fields, ...result.status }, object.metadata.resourceVersion);

  const involvedObject = {
    apiVersion: apiVersionOf(resource),
    kind: resource.kind,
    name: object.metadata.name,
    ...(object.metadata.namespace !== undefined ? { namespace: object.metadata.namespace } : {}),
    ...(object.metadata.uid !== undefined ? { uid: object.metadata.uid } : {}),
  };
  for (const transition of result.transitions) {
    if (transition.eventType === undefined) continue;
    const event = transitionEvent({ ...transition, eventType: transition.eventType });
    try {
      await ctx.events.emit({ involvedObject, ...event, source: args.source });
    } catch (err) {
      ctx.log.warn({ err: String(err), condition: transition.type }, 'status written, but its transition event could not be queued');
    }
  }
  return { ...result, written: true };
}
