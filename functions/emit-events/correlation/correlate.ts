import { formatConditionTime } from '../../../status/conditions.js';
import { aggregateStep, combinedMessage } from './aggregate.js';
import { eventName } from './event-name.js';
import { type CoreEvent, type EventRequest, eventNamespace } from './event-request.js';
import { aggregateKey, eventKey, messageDigest } from './keys.js';
import { observeStep } from './observe.js';
import { msUntilFull, takeToken } from './spam-filter.js';
import { type CorrelationState, type CorrelatorOptions, DEFAULT_CORRELATOR_OPTIONS, type ObservationRecord } from './state.js';

/** The strategic-merge patch client-go sends for a repeat: absolute values, so replaying it is harmless. */
export interface CountPatch {
  count: number;
  lastTimestamp: string;
  message: string;
}

export type CorrelationAction =
  /** First occurrence: create `event`; 409 AlreadyExists means a replica or an earlier attempt did. */
  | { kind: 'create'; event: CoreEvent }
  /**
   * A repeat: PATCH `patch` onto the Event `namespace/name`. On 404 (expired, or its create was
   * dropped by the spam filter) create `event` instead, which carries the same count, as client-go does.
   */
  | { kind: 'patch'; namespace: string; name: string; patch: CountPatch; event: CoreEvent }
  /** Over the spam filter's budget: write nothing. The occurrence is still counted. */
  | { kind: 'drop'; reason: 'SpamFiltered'; namespace: string; name: string; count: number };

export interface CorrelationResult {
  action: CorrelationAction;
  /** The state to write back (all four records), in the same atomic step that read `state`. */
  next: CorrelationState;
  /** The request went to its group's combined Event. */
  aggregated: boolean;
}

export function resolveOptions(options: Partial<CorrelatorOptions> = {}): CorrelatorOptions {
  const resolved = { ...DEFAULT_CORRELATOR_OPTIONS, ...options };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isFinite(value) || value <= 0) throw new RangeError(`correlator option ${name} must be positive, got ${value}`);
  }
  return resolved;
}

function buildEvent(request: EventRequest, record: ObservationRecord, message: string): CoreEvent {
  const event: CoreEvent = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: record.name, namespace: eventNamespace(request) },
    involvedObject: request.involvedObject,
    reason: request.reason,
    message,
    type: request.type,
    count: record.count,
    // metav1.Time, as conditions write it: one formatter for every timestamp Ripple writes.
    firstTimestamp: formatConditionTime(new Date(record.firstTimestampMs)),
    lastTimestamp: formatConditionTime(new Date(record.lastTimestampMs)),
    source: { component: request.source },
    reportingComponent: request.source,
    reportingInstance: '',
  };
  if (request.action !== undefined) event.action = request.action;
  if (request.related !== undefined) event.related = request.related;
  return event;
}

/**
 * client-go's EventCorrelator over explicit state: aggregate → observe (dedupe and count) → spam
 * filter, in that order. As in client-go the spam filter comes last, so a dropped occurrence is
 * still counted and the next write that passes carries the full count; and the aggregate and the
 * count are updated even for dropped occurrences.
 */
export function correlate(
  request: EventRequest,
  state: CorrelationState,
  nowMs: number,
  options: Partial<CorrelatorOptions> = {},
): CorrelationResult {
  const opts = resolveOptions(options);
  const group = aggregateStep(state.aggregate, messageDigest(request.message), nowMs, opts);

  const key = group.aggregated ? aggregateKey(request) : eventKey(request);
  const message = group.aggregated ? combinedMessage(request.message) : request.message;
  const previous = group.aggregated ? state.aggregateObservation : state.eventObservation;
  const observed = observeStep(previous, nowMs, opts.observationTtlMs, (first) =>
    eventName(request.involvedObject.name, key, first),
  );
  const spam = takeToken(state.spam, nowMs, opts);

  const next: CorrelationState = {
    aggregate: group.record,
    eventObservation: group.aggregated ? state.eventObservation : observed.record,
    aggregateObservation: group.aggregated ? observed.record : state.aggregateObservation,
    spam: spam.bucket,
  };
  const event = buildEvent(request, observed.record, message);
  const { name, namespace } = event.metadata;

  let action: CorrelationAction;
  if (!spam.allowed) {
    action = { kind: 'drop', reason: 'SpamFiltered', namespace, name, count: observed.record.count };
  } else if (observed.isNew) {
    action = { kind: 'create', event };
  } else {
    action = {
      kind: 'patch',
      namespace,
      name,
      patch: { count: event.count, lastTimestamp: event.lastTimestamp, message: event.message },
      event,
    };
  }
  return { action, next, aggregated: group.aggregated };
}

export interface CorrelationTtls {
  aggregate?: number;
  eventObservation?: number;
  aggregateObservation?: number;
  spam?: number;
}

/**
 * How long each record of `state` is worth keeping (ms), for the Redis write's PX. Past it a record
 * reads the same as an absent one, so expiring it changes no decision. At least 1 ms each.
 */
export function correlationTtlsMs(state: CorrelationState, nowMs: number, options: Partial<CorrelatorOptions> = {}): CorrelationTtls {
  const opts = resolveOptions(options);
  const atLeastOne = (ms: number) => Math.max(1, Math.ceil(ms));
  const ttls: CorrelationTtls = {};
  if (state.aggregate !== null) ttls.aggregate = atLeastOne(state.aggregate.lastTimestampMs + opts.aggregateIntervalMs - nowMs);
  if (state.eventObservation !== null) {
    ttls.eventObservation = atLeastOne(state.eventObservation.lastTimestampMs + opts.observationTtlMs - nowMs);
  }
  if (state.aggregateObservation !== null) {
    ttls.aggregateObservation = atLeastOne(state.aggregateObservation.lastTimestampMs + opts.observationTtlMs - nowMs);
  }
  if (state.spam !== null) ttls.spam = atLeastOne(msUntilFull(state.spam, nowMs, opts));
  return ttls;
}
