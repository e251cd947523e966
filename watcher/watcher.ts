import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeObject } from '../kube/object.js';
import { apiVersionOf, resourceId, type ResourceRef } from '../kube/resources.js';
import type { EventSink } from '../runtime/events.js';
import type { FunctionDefinition, MapContext, Trigger } from '../runtime/function.js';
import type { Logger } from '../base/log.js';
import { DEFAULT_RECONNECT, ReconnectBackoff, type ReconnectBackoffOptions } from './backoff.js';
import { BatchWindow } from './batch-window.js';
import { DEFAULT_DELIVERY, type DeliveryBufferOptions } from './delivery-buffer.js';
import type { WatchEvent } from './events.js';
import { matchesLabels, parseLabelSelector } from './label-selector.js';
import { ListWatch, type ListWatchOptions, type WatchHealth } from './list-watch.js';
import type { WatchMetrics } from './metrics.js';
import { passes } from './predicates.js';
import { describeProjection, mergeProjections } from './projection.js';
import { isTransientSinkError } from './sink-errors.js';
import { storeKey, type ObjectStore } from './store.js';

/** What the watcher needs of one list+watch; ListWatch in production, a plain store in unit tests. */
export interface WatchSource {
  readonly store: ObjectStore;
  health(): WatchHealth;
  waitForSync(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface WatcherOptions {
  kc: KubeConfig;
  functions: FunctionDefinition[];
  /**
   * Hands a key to a function's queue. `resourceVersion` is given when the event is of the key's own object
   * and that object is the function's primary resource (the version the run it wakes must not plan below:
   * ReconcileRequest.minResourceVersion); keys a mapper derived from another object get none. A trigger's
   * batch window (Trigger.batchMs) is kept here, in the watcher (batch-window.ts): its key is enqueued once
   * when the window ends.
   */
  enqueue: (fn: string, key: string, reason: string, resourceVersion?: string) => Promise<void>;
  /**
   * Hands many keys to a function's queue at once (WorkQueue.addMany: pipelined). The replay on taking
   * over uses it, so replaying 1,000 objects is a few round trips; without it, one enqueue per key.
   * `resourceVersions[i]` is keys[i]'s, as for enqueue.
   */
  enqueueMany?: (fn: string, keys: string[], reason: string, resourceVersions?: Array<string | undefined>) => Promise<void>;
  /** Only the leader enqueues; followers keep their stores warm to take over at once. */
  isLeader: () => boolean;
  log: Logger;
  /** Watch only this namespace (triggers that name their own namespace keep it); default all. */
  namespace?: string;
  /** Backoff between attempts to replay an object whose enqueue failed (default: the reconnect backoff). */
  replayBackoff?: ReconnectBackoffOptions;
  /** Makes the list+watch of one group (default: a ListWatch). */
  source?: (opts: ListWatchOptions) => WatchSource;
  /** Watch metrics (buffered events, dead letters, relists, bookmarks), when the process exposes metrics. */
  metrics?: WatchMetrics;
  /** Where a Warning Event about a dead-lettered watch event goes (emit-events' queue sink). */
  events?: EventSink;
  /** How a key that fails to enqueue on its own is retried before it is dead-lettered. */
  delivery?: Partial<DeliveryBufferOptions>;
}

/** `primary`: the trigger watches its function's primary resource (FunctionDefinition.primary). */
type GroupTriggers = Array<{ fn: string; trigger: Trigger; primary: boolean }>;

/** Objects replayed per batch (their keys go to WatcherOptions.enqueueMany together). */
const REPLAY_BATCH = 1000;

interface WatchGroup {
  source: WatchSource;
  resource: ResourceRef;
  namespace?: string;
  labelSelector?: string;
  triggers: GroupTriggers;
}

/**
 * Composes the triggers every function declares into one list+watch per (resource, namespace,
 * selector), runs each event through each trigger's predicate and mapper, and enqueues the keys.
 */
export class Watcher {
  private readonly groups = new Map<string, WatchGroup>();
  private readonly mapContext: MapContext;
  private stopped = false;
  private readonly wakers = new Set<() => void>();
  private readonly batches: BatchWindow;

  constructor(private readonly opts: WatcherOptions) {
    this.mapContext = { list: (resource, namespace, labelSelector) => storeLookup([...this.groups.values()], resource, namespace, labelSelector) };
    this.batches = new BatchWindow({
      enqueue: (fn, key, reason) => opts.enqueue(fn, key, reason),
      isLeader: () => opts.isLeader(),
      log: opts.log,
      backoff: opts.replayBackoff,
      maxAttempts: opts.delivery?.maxAttempts,
      onGiveUp: (fn) => opts.metrics?.deadLetters.inc({ resource: `batch:${fn}` }),
      gauge: opts.metrics?.batched,
    });
  }

  /** Keys waiting in a trigger's batch window for their one enqueue. */
  get batched(): number {
    return this.batches.size;
  }

  start(): void {
    const makeSource = this.opts.source ?? ((o: ListWatchOptions) => new ListWatch(o));
    // Grouped first, sources made after: a shared watch keeps the union of its triggers' projections.
    const pending = new Map<string, GroupTriggers>();
    for (const fn of this.opts.functions) {
      for (const declared of fn.triggers) {
        const namespace = declared.namespace ?? (declared.resource.namespaced ? this.opts.namespace : undefined);
        const trigger = { ...declared, namespace };
        const id = `${resourceId(trigger.resource)}|${trigger.namespace ?? '*'}|${trigger.labelSelector ?? ''}`;
        const triggers = pending.get(id) ?? [];
        triggers.push({ fn: fn.name, trigger, primary: fn.primary !== undefined && resourceId(fn.primary) === resourceId(trigger.resource) });
        pending.set(id, triggers);
      }
    }
    for (const [id, triggers] of pending) {
      const { trigger } = triggers[0] as GroupTriggers[number];
      const projection = mergeProjections(triggers.map((t) => t.trigger.projection));
      const source = makeSource({
        kc: this.opts.kc,
        resource: trigger.resource,
        namespace: trigger.namespace,
        labelSelector: trigger.labelSelector,
        // Optional only if every trigger sharing the watch says so.
        optional: triggers.every((t) => t.trigger.optional),
        projection,
        log: this.opts.log,
        onEvent: (event) => this.dispatch(triggers, event),
        onDeadLetter: (event, err, attempts) => this.reportDeadLetter(trigger.resource, event, err, attempts),
        delivery: this.opts.delivery,
        metrics: this.opts.metrics,
      });
      this.groups.set(id, { source, resource: trigger.resource, namespace: trigger.namespace, labelSelector: trigger.labelSelector, triggers });
    }
    this.opts.log.info(
      { watches: [...pending].map(([id, triggers]) => ({ id, keep: describeProjection(mergeProjections(triggers.map((t) => t.trigger.projection))) })) },
      'watching',
    );
  }

  async waitForSync(timeoutMs?: number): Promise<void> {
    await Promise.all([...this.groups.values()].map((g) => g.source.waitForSync(timeoutMs)));
  }

  /**
   * On becoming leader: replay every object in every store as a generic event, so whatever happened
   * while no leader was enqueueing is reconciled (level-triggered takeover). An object whose enqueue
   * fails (Redis down) is retried with backoff until it goes through, so the takeover is complete;
   * the replay gives up only when this process stops or stops leading (the next leader replays).
   * Never rejects: its caller fires it and forgets it.
   */
  async replayAll(): Promise<number> {
    let n = 0;
    try {
      for (const group of this.groups.values()) {
        const objects = group.source.store.list();
        for (let i = 0; i < objects.length; i += REPLAY_BATCH) {
          const chunk = objects.slice(i, i + REPLAY_BATCH);
          // Batched when the queue can take many keys at once; a chunk that fails goes again object by
          // object, with retries and dead-lettering (enqueueing a key twice only coalesces).
          if (!(await this.replayBatch(group, chunk))) {
            for (const object of chunk) {
              if (!(await this.replayOne(group, object))) {
                this.opts.log.info({ replayed: n }, 'replay stopped: no longer leading, or stopping');
                return n;
              }
              n++;
            }
          } else {
            n += chunk.length;
          }
        }
      }
    } catch (err) {
      this.opts.log.error({ err: String(err), replayed: n }, 'replay failed');
    }
    return n;
  }

  health(): WatchHealth[] {
    return [...this.groups.values()].map((g) => g.source.health());
  }

  /** Ready when every watch has synced and none has been down for longer than `boundMs`. */
  ready(boundMs: number, now = Date.now()): boolean {
    return this.health().every((h) => h.synced && (h.downSince === undefined || now - h.downSince < boundMs));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of this.wakers) wake();
    await Promise.all([...this.groups.values()].map((g) => g.source.stop()));
    // After the watches: no event can open a window any more; what the windows hold is enqueued now.
    await this.batches.stop();
  }

  /**
   * Enqueues the keys of `objects` (each as a generic event through the group's predicates and mappers)
   * with one enqueueMany per function and reason. False when it cannot (no enqueueMany, not leading,
   * stopping) or any of them failed: the caller then replays these objects one by one.
   */
  private async replayBatch(group: WatchGroup, objects: KubeObject[]): Promise<boolean> {
    const many = this.opts.enqueueMany;
    if (!many || this.stopped || !this.opts.isLeader()) return false;
    // Each key with the version of its own object, when the replayed object is that key's primary.
    const buckets = new Map<string, { fn: string; reason: string; keys: Map<string, string | undefined> }>();
    for (const object of objects) {
      for (const { fn, key, reason, resourceVersion } of keysOf(group.triggers, { type: 'generic', object }, this.mapContext, this.opts.log)) {
        const id = `${fn}\n${reason}`;
        let bucket = buckets.get(id);
        if (!bucket) buckets.set(id, (bucket = { fn, reason, keys: new Map() }));
        if (resourceVersion !== undefined || !bucket.keys.has(key)) bucket.keys.set(key, resourceVersion);
      }
    }
    try {
      for (const { fn, reason, keys } of buckets.values()) await many(fn, [...keys.keys()], reason, [...keys.values()]);
      return true;
    } catch (err) {
      this.opts.log.warn({ resource: resourceId(group.resource), objects: objects.length, err: String(err) }, 'replay: a batched enqueue failed; replaying these objects one by one');
      return false;
    }
  }

  private async replayOne(group: WatchGroup, object: KubeObject): Promise<boolean> {
    const backoff = new ReconnectBackoff(this.opts.replayBackoff ?? DEFAULT_RECONNECT);
    const maxAttempts = this.opts.delivery?.maxAttempts ?? DEFAULT_DELIVERY.maxAttempts;
    let ownFailures = 0;
    for (;;) {
      if (this.stopped || !this.opts.isLeader()) return false;
      const event: WatchEvent = { type: 'generic', object };
      try {
        await this.dispatch(group.triggers, event);
        return true;
      } catch (err) {
        const context = { resource: resourceId(group.resource), key: storeKey(object), err: String(err) };
        // A key the queue refuses (not Redis being down) would stall the whole takeover: give it up
        // after the bounded attempts, as the watch's delivery does, and go on with the next object.
        if (!isTransientSinkError(err) && ++ownFailures >= maxAttempts) {
          this.opts.metrics?.deadLetters.inc({ resource: context.resource });
          this.opts.log.error({ ...context, attempts: ownFailures }, 'replay: gave up an object whose key failed on its own repeatedly (dead-lettered)');
          await this.reportDeadLetter(group.resource, event, err, ownFailures).catch((e: unknown) => this.opts.log.error({ ...context, err: String(e) }, 'could not report a dead-lettered watch event'));
          return true;
        }
        const delay = backoff.next(Date.now());
        this.opts.log.warn({ ...context, retryInMs: Math.round(delay) }, 'replay: could not enqueue; retrying');
        await this.sleep(delay);
      }
    }
  }

  /**
   * A Warning Event on the object whose event was given up, so `kubectl describe` shows it next to
   * the object. Only the leader dispatches, so only the leader gets here. Best effort: the pump logs
   * a failure to report and goes on.
   */
  private async reportDeadLetter(resource: ResourceRef, event: WatchEvent, err: unknown, attempts: number): Promise<void> {
    if (!this.opts.events) return;
    const { metadata } = event.object;
    await this.opts.events.emit({
      involvedObject: {
        apiVersion: event.object.apiVersion ?? apiVersionOf(resource),
        kind: event.object.kind ?? resource.kind,
        namespace: metadata.namespace,
        name: metadata.name,
        uid: metadata.uid,
        resourceVersion: metadata.resourceVersion,
      },
      type: 'Warning',
      reason: 'WatchEventDropped',
      message: `Ripple's watcher could not enqueue this object's ${event.type} event after ${attempts} attempts and gave it up: ${String(err).slice(0, 300)}. Its next change or resync tries again.`,
      source: 'ripple-watcher',
    });
  }

  private dispatch(triggers: GroupTriggers, event: WatchEvent): Promise<void> {
    if (!this.opts.isLeader()) return Promise.resolve();
    return dispatchEvent(triggers, event, this.mapContext, this.opts.enqueue, this.opts.log, this.batches);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(t);
        this.wakers.delete(wake);
        resolve();
      };
      const t = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }
}

/**
 * Runs one event through each trigger. A predicate or mapper that throws is a bug in that trigger:
 * it is logged and that trigger skips the event, because the caller (ListWatch) retries a failed
 * event and a bad mapper would fail every retry. An enqueue failure propagates, so the event is
 * retried (or, if its key keeps failing on its own, dead-lettered: delivery-buffer.ts); the other
 * enqueues of the event are still made first, so one refused key does not cost the other functions
 * theirs. When several fail, an error that is not a transient one is thrown, as the key's own. A key
 * of a trigger with a batch window goes to the window instead (batch-window.ts), which enqueues it later.
 */
export async function dispatchEvent(
  triggers: GroupTriggers,
  event: WatchEvent,
  ctx: MapContext,
  enqueue: WatcherOptions['enqueue'],
  log: Logger,
  batches: Pick<BatchWindow, 'add'>,
): Promise<void> {
  const failures: unknown[] = [];
  for (const { fn, key, reason, resourceVersion, batchMs } of keysOf(triggers, event, ctx, log)) {
    // A key that carries its object's version goes at once: the window keeps no versions, and the run it wakes
    // must not plan below this one (queue/resource-version-order.ts).
    if (batchMs && resourceVersion === undefined) {
      batches.add(fn, key, reason, batchMs);
      continue;
    }
    try {
      await enqueue(fn, key, reason, resourceVersion);
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length > 0) throw failures.find((e) => !isTransientSinkError(e)) ?? failures[0];
}

/**
 * The keys one event asks each trigger's function to reconcile; a trigger that throws is logged and skipped. A
 * key that is the event's own object, on a trigger of the function's primary resource, carries the object's
 * resourceVersion (queue/resource-version-order.ts: the run it wakes must not plan below it).
 */
function keysOf(triggers: GroupTriggers, event: WatchEvent, ctx: MapContext, log: Logger): Array<{ fn: string; key: string; reason: string; resourceVersion?: string; batchMs?: number }> {
  const out: Array<{ fn: string; key: string; reason: string; resourceVersion?: string; batchMs?: number }> = [];
  const own = storeKey(event.object);
  const version = event.object.metadata.resourceVersion;
  for (const { fn, trigger, primary } of triggers) {
    try {
      if (!passes(trigger.predicate, event)) continue;
      const reason = `${trigger.resource.kind}:${event.type}`;
      const batch = trigger.batchMs ? { batchMs: trigger.batchMs } : {};
      for (const key of trigger.map(event, ctx)) out.push({ fn, key, reason, ...(primary && key === own && version ? { resourceVersion: version } : {}), ...batch });
    } catch (err) {
      log.error(
        { function: fn, resource: resourceId(trigger.resource), key: storeKey(event.object), event: event.type, err: err instanceof Error ? (err.stack ?? err.message) : String(err) },
        "a trigger's predicate or mapper threw; this trigger skips the event",
      );
    }
  }
  return out;
}

/**
 * MapContext.list: the objects of a resource type in a namespace (all namespaces when none), as the
 * watcher's stores hold them. With a label selector, the group watching with exactly that selector
 * answers; failing that, a group watching without one, filtered by the selector. Without a selector
 * only an unselected group answers: a selected group holds a subset, and which one would be picked
 * must not depend on the order functions are listed in.
 */
export function storeLookup(
  groups: Array<Pick<WatchGroup, 'resource' | 'namespace' | 'labelSelector'> & { source: Pick<WatchSource, 'store'> }>,
  resource: ResourceRef,
  namespace?: string,
  labelSelector?: string,
): KubeObject[] {
  const wanted = labelSelector?.trim() ?? '';
  const candidates = groups.filter((g) => resourceId(g.resource) === resourceId(resource) && (g.namespace === undefined || g.namespace === namespace));
  const exact = candidates.find((g) => (g.labelSelector?.trim() ?? '') === wanted);
  if (exact) return exact.source.store.list(namespace);
  const whole = wanted ? candidates.find((g) => !g.labelSelector?.trim()) : undefined;
  if (!whole) return [];
  const requirements = parseLabelSelector(wanted);
  return whole.source.store.list(namespace).filter((o) => matchesLabels(requirements, o.metadata.labels));
}
