import { describe, expect, it } from 'vitest';
import { aggregateStep } from './aggregate.js';
import { eventName, isDnsSubdomain } from './event-name.js';
import type { EventRequest } from './event-request.js';
import { aggregateKey, correlationRedisKeys, eventKey, spamKey } from './keys.js';
import { observeStep } from './observe.js';
import { msUntilFull, takeToken } from './spam-filter.js';

const opts = { aggregateMaxEvents: 10, aggregateIntervalMs: 600_000, spamBurst: 25, spamRefillIntervalMs: 300_000 };

const req: EventRequest = {
  involvedObject: { apiVersion: 'llmd.ai/v1alpha1', kind: 'VariantAutoscaling', namespace: 'llm', name: 'va', uid: 'u1', fieldPath: 'spec' },
  type: 'Warning',
  reason: 'MetricsUnavailable',
  message: 'prometheus unreachable',
  source: 'wva',
};

describe('keys', () => {
  it('puts the message in the event key only, and fieldPath in the event key only', () => {
    const other = { ...req, message: 'different', involvedObject: { ...req.involvedObject, fieldPath: 'status' } };
    expect(eventKey(other)).not.toBe(eventKey(req));
    expect(aggregateKey(other)).toBe(aggregateKey(req));
    expect(spamKey(other)).toBe(spamKey(req));
  });

  it('puts the reason in the aggregate key but not in the spam key; the type in both', () => {
    const otherReason = { ...req, reason: 'TargetMissing' };
    expect(aggregateKey(otherReason)).not.toBe(aggregateKey(req));
    expect(spamKey(otherReason)).toBe(spamKey(req));
    expect(spamKey({ ...req, type: 'Normal' })).not.toBe(spamKey(req));
  });

  it('cannot be confused by field values that contain each other', () => {
    const a = { ...req, reason: 'AB', message: 'C' };
    const b = { ...req, reason: 'A', message: 'BC' };
    expect(eventKey(a)).not.toBe(eventKey(b));
  });

  it('gives all four Redis keys of a request one hash tag (one cluster slot)', () => {
    const keys = correlationRedisKeys(req);
    const tags = Object.values(keys).map((k) => /\{([0-9a-f]+)\}/.exec(k)?.[1]);
    expect(new Set(tags).size).toBe(1);
    expect(new Set(Object.values(keys)).size).toBe(4);
    expect(keys.spam).toMatch(/^ripple:events:\{[0-9a-f]{16}\}:spam:[0-9a-f]{32}$/);
  });
});

describe('aggregateStep', () => {
  it('counts distinct messages only and aggregates at the 10th', () => {
    let record = null;
    for (let i = 0; i < 9; i++) {
      const out = aggregateStep(record, `m${i}`, i, opts);
      expect(out.aggregated).toBe(false);
      record = aggregateStep(out.record, `m${i}`, i, opts).record; // a repeat adds nothing
    }
    expect(record?.messages).toHaveLength(9);
    const out = aggregateStep(record, 'm9', 10, opts);
    expect(out.aggregated).toBe(true);
    expect(out.record.messages).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8']);
  });

  it('starts afresh after a gap longer than the interval', () => {
    const first = aggregateStep(null, 'a', 0, opts).record;
    expect(aggregateStep(first, 'b', 600_000, opts).record.messages).toEqual(['a', 'b']);
    expect(aggregateStep(first, 'b', 600_001, opts).record.messages).toEqual(['b']);
  });
});

describe('observeStep', () => {
  const name = (first: number) => `n-${first}`;
  it('starts at 1, counts up keeping name and first timestamp', () => {
    const a = observeStep(null, 1000, 3_600_000, name);
    expect(a).toEqual({ record: { name: 'n-1000', count: 1, firstTimestampMs: 1000, lastTimestampMs: 1000 }, isNew: true });
    const b = observeStep(a.record, 5000, 3_600_000, name);
    expect(b).toEqual({ record: { name: 'n-1000', count: 2, firstTimestampMs: 1000, lastTimestampMs: 5000 }, isNew: false });
  });
});

describe('takeToken', () => {
  it('starts full at 25 and refills one per 300 s, capped at the burst', () => {
    let bucket = null;
    for (let i = 0; i < 25; i++) {
      const out = takeToken(bucket, 0, opts);
      expect(out.allowed).toBe(true);
      bucket = out.bucket;
    }
    expect(bucket).toEqual({ tokens: 0, lastMs: 0 });
    expect(takeToken(bucket, 299_999, opts).allowed).toBe(false);
    expect(takeToken(bucket, 300_000, opts)).toEqual({ bucket: { tokens: 0, lastMs: 300_000 }, allowed: true });
    expect(takeToken(bucket, 100 * 300_000, opts).bucket.tokens).toBe(24);
    expect(msUntilFull({ tokens: 0, lastMs: 0 }, 0, opts)).toBe(25 * 300_000);
  });

  it('refills nothing when the clock steps backwards', () => {
    const bucket = { tokens: 0.5, lastMs: 10_000 };
    expect(takeToken(bucket, 5_000, opts)).toEqual({ bucket: { tokens: 0.5, lastMs: 10_000 }, allowed: false });
  });
});

describe('eventName', () => {
  it('is <name>.<16 hex>, stable for the same key and first time, different otherwise', () => {
    const a = eventName('llama', 'k', 1);
    expect(a).toMatch(/^llama\.[0-9a-f]{16}$/);
    expect(eventName('llama', 'k', 1)).toBe(a);
    expect(eventName('llama', 'k', 2)).not.toBe(a);
    expect(eventName('llama', 'k2', 1)).not.toBe(a);
  });

  it('folds names that are not DNS subdomains', () => {
    expect(eventName('system:node:Worker_1', 'k', 1)).toMatch(/^system-node-worker-1\.[0-9a-f]{16}$/);
    expect(eventName('---', 'k', 1)).toMatch(/^[0-9a-f]{16}$/);
    const long = eventName('a'.repeat(253), 'k', 1);
    expect(long.length).toBe(253);
    expect(isDnsSubdomain(long)).toBe(true);
  });
});
