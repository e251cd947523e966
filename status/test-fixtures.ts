/**
 * For unit tests of code that writes status through `writeStatus`: an object kept in memory whose
 * status is patched the way the API server applies `application/merge-patch+json` (RFC 7386), and
 * an in-memory outbox, so a sequence of reconciles can be driven without a cluster or Redis. The real
 * status subresource is exercised by test/integration/status-write.test.ts.
 */
import { plainStateWriter } from '../queue/fenced-write.js';
import { KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { asRecord } from '../kube/json.js';
import { Resources, type ResourceRef } from '../kube/resources.js';
import { eventSinkOf, type EventSink } from '../runtime/events.js';
import type { PendingTransition, TransitionOutbox } from './transition-outbox.js';
import { type StatusOwner, type WriteStatusArgs, type WriteStatusResult, writeStatus } from './write.js';

export type Emitted = Parameters<EventSink['emit']>[0];

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  const p = asRecord(patch);
  if (p === undefined) return patch;
  const out: Record<string, unknown> = { ...(asRecord(target) ?? {}) };
  for (const [key, value] of Object.entries(p)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** The outbox in memory, keyed by condition type like the Redis hash. */
export class MemoryOutbox implements TransitionOutbox {
  readonly entries = new Map<string, PendingTransition>();
  async load(): Promise<PendingTransition[]> {
    return [...this.entries.values()].map((e) => structuredClone(e));
  }
  async save(entries: readonly PendingTransition[]): Promise<void> {
    for (const e of entries) this.entries.set(e.condition.type, structuredClone(e));
  }
  async remove(entry: PendingTransition): Promise<void> {
    if (JSON.stringify(this.entries.get(entry.condition.type)) === JSON.stringify(entry)) this.entries.delete(entry.condition.type);
  }
}

export interface StatusFixtureOptions {
  resource?: ResourceRef;
  source?: string;
  object?: StatusOwner;
  nowMs: number;
}

export class StatusFixture {
  object: StatusOwner;
  patches: Array<{ status: Record<string, unknown>; resourceVersion: string | undefined }> = [];
  emitted: Emitted[] = [];
  readonly outbox = new MemoryOutbox();
  failPatch = false;
  failEmit = false;
  /** Queueing an Event never returns: the process died after the write. */
  hangEmit = false;
  nowMs: number;
  private readonly resource: ResourceRef;
  private readonly source: string;
  // Never connected: the outbox above stands in for the Redis one.
  private readonly redis = new Redis({ lazyConnect: true });

  constructor(opts: StatusFixtureOptions) {
    this.resource = opts.resource ?? Resources.modelServing;
    this.source = opts.source ?? 'modelserving-controller';
    this.object = opts.object ?? { metadata: { name: 'llama', namespace: 'llm', uid: 'u1', generation: 1, resourceVersion: '1' } };
    this.nowMs = opts.nowMs;
  }

  /** The status as stored, as a plain record. */
  get status(): Record<string, unknown> {
    return asRecord(this.object.status) ?? {};
  }

  async reconcile(input: WriteStatusArgs['input'], fields?: Record<string, unknown>, extra: Pick<WriteStatusArgs, 'conditionEvents'> = {}): Promise<WriteStatusResult> {
    const ctx = {
      kc: new KubeConfig(),
      redis: this.redis,
      // Unused: the outbox is this fixture's own (below).
      state: plainStateWriter(this.redis, 'test', 'status-test'),
      log: pino({ level: 'silent' }),
      now: () => new Date(this.nowMs),
      events: eventSinkOf(async (request: Emitted) => {
        if (this.hangEmit) return new Promise<void>(() => undefined);
        if (this.failEmit) throw new Error('redis is down');
        this.emitted.push(request);
      }),
    };
    return writeStatus(ctx, {
      resource: this.resource,
      object: structuredClone(this.object),
      input,
      fields,
      ...extra,
      source: this.source,
      outbox: this.outbox,
      patch: async (status, resourceVersion) => {
        if (this.failPatch) throw new Error('409 Conflict');
        this.patches.push({ status, resourceVersion });
        const rv = String(Number(this.object.metadata.resourceVersion) + 1);
        this.object = { ...this.object, metadata: { ...this.object.metadata, resourceVersion: rv }, status: mergePatch(this.object.status, structuredClone(status)) };
      },
    });
  }
}
