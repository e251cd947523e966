import { describe, expect, it } from 'vitest';
import { type CorrelationAction, type CorrelationResult, correlate, correlationTtlsMs, resolveOptions } from './correlate.js';
import { isDnsSubdomain } from './event-name.js';
import type { CoreEvent, EventRequest } from './event-request.js';
import { correlationRedisKeys } from './keys.js';
import {
  AggregateRecordSchema,
  type CorrelationState,
  CorrelationStateSchema,
  EMPTY_CORRELATION_STATE,
  ObservationRecordSchema,
  SpamBucketSchema,
  parseRecord,
} from './state.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const S = 1000;

function request(overrides: Partial<EventRequest> = {}): EventRequest {
  return {
    involvedObject: {
      apiVersion: 'workload.serving.volcano.sh/v1alpha1',
      kind: 'ModelServing',
      namespace: 'llm',
      name: 'llama',
      uid: '6f1c7f1e-0000-4000-8000-000000000001',
    },
    type: 'Normal',
    reason: 'RoleCreating',
    message: 'Role prefill/prefill-0 in ServingGroup llama-0 is now Creating',
    source: 'modelserving-controller',
    ...overrides,
  };
}

/**
 * Drives the pure correlator through a sequence of requests, carrying its state between calls as
 * JSON strings (the way the handler stores it) and folding each action into a map of Events, so
 * counts and names can be checked over a whole sequence. The handler's real Redis and API server
 * are exercised by the integration tests.
 */
class Harness {
  readonly stored = new Map<string, string>();
  readonly events = new Map<string, CoreEvent>();
  writes = 0;

  record(req: EventRequest, nowMs: number): CorrelationResult {
    const keys = correlationRedisKeys(req);
    const state: CorrelationState = {
      aggregate: parseRecord(AggregateRecordSchema, this.stored.get(keys.aggregate)),
      eventObservation: parseRecord(ObservationRecordSchema, this.stored.get(keys.eventObservation)),
      aggregateObservation: parseRecord(ObservationRecordSchema, this.stored.get(keys.aggregateObservation)),
      spam: parseRecord(SpamBucketSchema, this.stored.get(keys.spam)),
    };
    const result = correlate(req, state, nowMs);
    for (const field of ['aggregate', 'eventObservation', 'aggregateObservation', 'spam'] as const) {
      const value = result.next[field];
      if (value !== null) this.stored.set(keys[field], JSON.stringify(value));
    }
    this.apply(result.action);
    return result;
  }

  private apply(action: CorrelationAction): void {
    if (action.kind === 'drop') return;
    this.writes++;
    const id = `${action.event.metadata.namespace}/${action.event.metadata.name}`;
    const existing = this.events.get(id);
    if (action.kind === 'create') {
      if (existing === undefined) this.events.set(id, structuredClone(action.event));
      return;
    }
    if (existing === undefined) this.events.set(id, structuredClone(action.event));
    else this.events.set(id, { ...existing, ...action.patch });
  }

  only(): CoreEvent {
    expect(this.events.size).toBe(1);
    return [...this.events.values()][0]!;
  }
}

const messages = (n: number) => Array.from({ length: n }, (_, i) => `Role prefill/prefill-${i} in ServingGroup llama-0 is now Creating`);

describe('dedupe and count (client-go eventObserve)', () => {
  it('creates a single event with count 1 and a deterministic client-go-shaped name', () => {
    const h = new Harness();
    const { action } = h.record(request(), T0);
    expect(action.kind).toBe('create');
    if (action.kind !== 'create') return;
    expect(action.event).toMatchObject({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { namespace: 'llm' },
      reason: 'RoleCreating',
      type: 'Normal',
      count: 1,
      firstTimestamp: '2026-03-01T12:00:00Z',
      lastTimestamp: '2026-03-01T12:00:00Z',
      source: { component: 'modelserving-controller' },
      reportingComponent: 'modelserving-controller',
      reportingInstance: '',
    });
    expect(action.event.metadata.name).toMatch(/^llama\.[0-9a-f]{16}$/);
  });

  it('counts the same event: patch count 2, same name, firstTimestamp kept', () => {
    const h = new Harness();
    const first = h.record(request(), T0).action;
    const second = h.record(request(), T0 + 7 * S).action;
    expect(second.kind).toBe('patch');
    if (second.kind !== 'patch' || first.kind !== 'create') return;
    expect(second.name).toBe(first.event.metadata.name);
    expect(second.patch).toEqual({
      count: 2,
      lastTimestamp: '2026-03-01T12:00:07Z',
      message: 'Role prefill/prefill-0 in ServingGroup llama-0 is now Creating',
    });
    expect(second.event.firstTimestamp).toBe('2026-03-01T12:00:00Z');
  });

  it('10 identical events make one Event with count 10 in 10 writes', () => {
    const h = new Harness();
    for (let i = 0; i < 10; i++) h.record(request(), T0 + i * S);
    expect(h.only()).toMatchObject({ count: 10, firstTimestamp: '2026-03-01T12:00:00Z', lastTimestamp: '2026-03-01T12:00:09Z' });
    expect(h.writes).toBe(10);
  });

  it('does not aggregate the same event: the 11th identical one is count 11', () => {
    const h = new Harness();
    let last: CorrelationResult | undefined;
    for (let i = 0; i < 11; i++) last = h.record(request(), T0 + i * 30 * S);
    expect(last?.aggregated).toBe(false);
    expect(last?.action).toMatchObject({ kind: 'patch', patch: { count: 11 } });
  });

  it('a different fieldPath, type, reason or object is a different event', () => {
    const h = new Harness();
    h.record(request(), T0);
    const variants = [
      request({ involvedObject: { ...request().involvedObject, fieldPath: 'spec.template.roles{prefill}' } }),
      request({ type: 'Warning' }),
      request({ reason: 'RoleRunning' }),
      request({ involvedObject: { ...request().involvedObject, name: 'mistral' } }),
    ];
    for (const v of variants) expect(h.record(v, T0 + S).action.kind).toBe('create');
    expect(h.events.size).toBe(5);
  });

  it('forgets an event idle for longer than the observation TTL (1 h) and starts a new object', () => {
    const h = new Harness();
    const first = h.record(request(), T0).action;
    const later = h.record(request(), T0 + 3_600_000 + 1).action;
    expect(later.kind).toBe('create');
    if (later.kind !== 'create' || first.kind !== 'create') return;
    expect(later.event.count).toBe(1);
    expect(later.event.metadata.name).not.toBe(first.event.metadata.name);
    const within = h.record(request(), T0 + 3_600_000 + 2).action;
    expect(within).toMatchObject({ kind: 'patch', patch: { count: 2 } });
  });
});

describe('aggregation of similar events (client-go EventAggregator)', () => {
  it('aggregates at the 10th distinct message within the interval into a combined Event', () => {
    const h = new Harness();
    const msgs = messages(10);
    for (let i = 0; i < 9; i++) {
      const r = h.record(request({ message: msgs[i]! }), T0 + i * 30 * S);
      expect(r.aggregated).toBe(false);
      expect(r.action.kind).toBe('create');
    }
    const tenth = h.record(request({ message: msgs[9]! }), T0 + 9 * 30 * S);
    expect(tenth.aggregated).toBe(true);
    expect(tenth.action.kind).toBe('create');
    if (tenth.action.kind !== 'create') return;
    expect(tenth.action.event).toMatchObject({
      count: 1,
      reason: 'RoleCreating',
      message: `(combined from similar events): ${msgs[9]}`,
    });
    expect(tenth.action.event.metadata.name).toMatch(/^llama\.[0-9a-f]{16}$/);
    expect(h.events.size).toBe(10);
  });

  it('keeps counting on the combined Event, with the latest message', () => {
    const h = new Harness();
    const msgs = messages(12);
    for (let i = 0; i < 10; i++) h.record(request({ message: msgs[i]! }), T0 + i * S);
    const eleventh = h.record(request({ message: msgs[10]! }), T0 + 10 * S);
    const twelfth = h.record(request({ message: msgs[11]! }), T0 + 11 * S);
    expect(eleventh.action).toMatchObject({ kind: 'patch', patch: { count: 2, message: `(combined from similar events): ${msgs[10]}` } });
    expect(twelfth.action).toMatchObject({ kind: 'patch', patch: { count: 3, message: `(combined from similar events): ${msgs[11]}` } });
    expect(h.events.size).toBe(10);
  });

  it('after aggregating, one of the first nine messages is still counted on its own Event', () => {
    const h = new Harness();
    const msgs = messages(10);
    for (let i = 0; i < 10; i++) h.record(request({ message: msgs[i]! }), T0 + i * S);
    const repeat = h.record(request({ message: msgs[0]! }), T0 + 10 * S);
    expect(repeat.aggregated).toBe(false);
    expect(repeat.action).toMatchObject({ kind: 'patch', patch: { count: 2, message: msgs[0] } });
    // …while the 10th message, dropped from the group's memory, goes to the combined Event again.
    expect(h.record(request({ message: msgs[9]! }), T0 + 11 * S).aggregated).toBe(true);
  });

  it('does not aggregate when the gap before the 10th similar event is longer than 600 s', () => {
    const h = new Harness();
    const msgs = messages(10);
    for (let i = 0; i < 9; i++) h.record(request({ message: msgs[i]! }), T0 + i * S);
    const r = h.record(request({ message: msgs[9]! }), T0 + 8 * S + 600 * S + 1);
    expect(r.aggregated).toBe(false);
    expect(r.action).toMatchObject({ kind: 'create', event: { message: msgs[9], count: 1 } });
  });

  it('still aggregates when every gap is exactly 600 s (the interval is a rolling one)', () => {
    const h = new Harness();
    const msgs = messages(10);
    let r: CorrelationResult | undefined;
    for (let i = 0; i < 10; i++) r = h.record(request({ message: msgs[i]! }), T0 + i * 600 * S);
    expect(r?.aggregated).toBe(true);
  });

  it('does not aggregate across sources, types or reasons', () => {
    const h = new Harness();
    const msgs = messages(10);
    for (let i = 0; i < 10; i++) {
      const r = request({ message: msgs[i]! });
      const variant =
        i % 3 === 0
          ? { ...r, source: 'other-controller' }
          : i % 3 === 1
            ? { ...r, reason: 'RoleRunning' }
            : r;
      expect(h.record(variant, T0 + i * S).aggregated).toBe(false);
    }
  });
});

describe('spam filter (client-go EventSourceObjectSpamFilter: burst 25, 1 per 300 s)', () => {
  it('lets 25 through, drops the 26th while still counting it, refills one token per 300 s', () => {
    const h = new Harness();
    const kinds: string[] = [];
    for (let i = 0; i < 30; i++) kinds.push(h.record(request(), T0).action.kind);
    expect(kinds.slice(0, 25)).toEqual(['create', ...Array<string>(24).fill('patch')]);
    expect(kinds.slice(25)).toEqual(Array<string>(5).fill('drop'));
    expect(h.only().count).toBe(25);

    const drop = h.record(request(), T0 + 299_999).action;
    expect(drop).toMatchObject({ kind: 'drop', reason: 'SpamFiltered', count: 31 });

    const refilled = h.record(request(), T0 + 300_000).action;
    expect(refilled).toMatchObject({ kind: 'patch', patch: { count: 32 } });
    expect(h.only().count).toBe(32);
    expect(h.record(request(), T0 + 300_001).action.kind).toBe('drop');
  });

  it('200 identical events: one Event and no more than 25 API writes', () => {
    const h = new Harness();
    for (let i = 0; i < 200; i++) h.record(request(), T0 + i * 50);
    expect(h.writes).toBe(25);
    expect(h.only().count).toBe(25);
    // The next write the budget allows carries the whole count.
    h.record(request(), T0 + 10 * 60 * S);
    expect(h.only().count).toBe(201);
  });

  it('a half-refilled bucket keeps its fraction: two 150 s waits make one token', () => {
    const h = new Harness();
    for (let i = 0; i < 25; i++) h.record(request(), T0);
    expect(h.record(request(), T0 + 150 * S).action.kind).toBe('drop');
    expect(h.record(request(), T0 + 300 * S).action.kind).toBe('patch');
  });

  it('budgets per involved object and per type, not per reason', () => {
    const h = new Harness();
    for (let i = 0; i < 25; i++) h.record(request({ reason: `Reason${i}`, message: 'm' }), T0);
    expect(h.record(request({ reason: 'Another' }), T0).action.kind).toBe('drop');
    expect(h.record(request({ type: 'Warning' }), T0).action.kind).toBe('create');
    expect(h.record(request({ involvedObject: { ...request().involvedObject, name: 'mistral' } }), T0).action.kind).toBe('create');
  });

  it('a first occurrence that was dropped is created later with its full count', () => {
    const h = new Harness();
    for (let i = 0; i < 25; i++) h.record(request({ message: `filler ${i % 5}`, reason: `R${i % 5}` }), T0);
    expect(h.record(request(), T0 + S).action.kind).toBe('drop');
    const later = h.record(request(), T0 + 301 * S).action;
    expect(later).toMatchObject({ kind: 'patch', patch: { count: 2 }, event: { count: 2 } });
    const created = [...h.events.values()].find((e) => e.reason === 'RoleCreating');
    expect(created?.count).toBe(2);
  });
});

describe('replicas and state', () => {
  it('two replicas deciding from the same state pick the same action and name', () => {
    const a = correlate(request(), EMPTY_CORRELATION_STATE, T0);
    const b = correlate(request(), EMPTY_CORRELATION_STATE, T0);
    expect(a).toEqual(b);
    const c = correlate(request(), a.next, T0 + S);
    const d = correlate(request(), JSON.parse(JSON.stringify(a.next)) as CorrelationState, T0 + S);
    expect(c).toEqual(d);
  });

  it('state is small, JSON-serializable and parses back', () => {
    let state: CorrelationState = EMPTY_CORRELATION_STATE;
    for (let i = 0; i < 12; i++) state = correlate(request({ message: `m${i}` }), state, T0 + i * S).next;
    const json = JSON.stringify(state);
    expect(CorrelationStateSchema.parse(JSON.parse(json))).toEqual(state);
    expect(json.length).toBeLessThan(600);
    expect(state.aggregate?.messages).toHaveLength(9);
  });

  it('treats unreadable records as absent', () => {
    expect(parseRecord(SpamBucketSchema, 'not json')).toBeNull();
    expect(parseRecord(SpamBucketSchema, '{"tokens":-1,"lastMs":0}')).toBeNull();
    expect(parseRecord(SpamBucketSchema, null)).toBeNull();
    expect(parseRecord(SpamBucketSchema, '{"tokens":3,"lastMs":5}')).toEqual({ tokens: 3, lastMs: 5 });
  });

  it('gives each record a TTL after which it reads as absent', () => {
    const { next } = correlate(request(), EMPTY_CORRELATION_STATE, T0);
    expect(correlationTtlsMs(next, T0)).toEqual({ aggregate: 600_000, eventObservation: 3_600_000, spam: 300_000 });
    let state = next;
    for (let i = 0; i < 24; i++) state = correlate(request(), state, T0).next;
    expect(correlationTtlsMs(state, T0).spam).toBe(25 * 300_000);
  });

  it('rejects nonsensical options', () => {
    expect(() => resolveOptions({ spamBurst: 0 })).toThrow(RangeError);
    expect(resolveOptions({ spamBurst: 5 }).spamBurst).toBe(5);
  });

  it('honours options: a burst of 2 drops the third', () => {
    let state = EMPTY_CORRELATION_STATE;
    const kinds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = correlate(request(), state, T0, { spamBurst: 2 });
      state = r.next;
      kinds.push(r.action.kind);
    }
    expect(kinds).toEqual(['create', 'patch', 'drop']);
  });
});

describe('event shape', () => {
  it('puts Events about cluster-scoped objects in default, and carries action and related', () => {
    const node = { apiVersion: 'v1', kind: 'Node', name: 'gpu-node-1', uid: 'n1' };
    const { action } = correlate(
      request({ involvedObject: node, action: 'Schedule', related: { apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: 'llm' } }),
      EMPTY_CORRELATION_STATE,
      T0,
    );
    expect(action).toMatchObject({
      kind: 'create',
      event: { metadata: { namespace: 'default' }, action: 'Schedule', related: { kind: 'Pod', name: 'p' } },
    });
  });

  it('names are valid DNS subdomains even for awkward object names', () => {
    for (const name of ['system:controller:attachdetach', 'A'.repeat(300), 'ok-name', '---', 'x.y']) {
      const { action } = correlate(request({ involvedObject: { ...request().involvedObject, name } }), EMPTY_CORRELATION_STATE, T0);
      if (action.kind !== 'create') throw new Error('expected create');
      expect(isDnsSubdomain(action.event.metadata.name)).toBe(true);
    }
  });
});
