import type { KubeConfig } from '@kubernetes/client-node';
import type { StateWriter } from '../queue/fenced-write.js';
import type { RedisClient } from '../queue/connection.js';
import type { Registry } from 'prom-client';
import type { KubeObject } from '../kube/object.js';
import type { ResourceRef } from '../kube/resources.js';
import type { WatchEvent } from '../watcher/events.js';
import type { Predicate } from '../watcher/predicates.js';
import type { Projection } from '../watcher/projection.js';
import type { EventSink } from './events.js';
import type { Logger } from '../base/log.js';

/** Reconcile this object (by key: `namespace/name`, or `name` if cluster-scoped). */
export interface ReconcileRequest {
  key: string;
  namespace?: string;
  name: string;
  /** Why: event, resync, requeue, retry, dirty, manual. For logs only: handlers read fresh state. */
  reason: string;
  /**
   * The highest resourceVersion of this key's own (primary) object among the watch events that enqueued it
   * since its previous run began, when any did (docs/kernel.md, "Woken at"). A handler that reads the object
   * from a cache of its own must not plan from a version older than this one: the event that woke it may have
   * been seen by the watcher before the handler's cache. Absent for requests no event of the object made
   * (resync, requeueAfter, another kind's event, a manual enqueue).
   */
  minResourceVersion?: string;
}

export interface ReconcileResult {
  requeueAfterMs?: number;
}

/**
 * Everything external a handler may use. No module-level state anywhere in a function: two copies of
 * a function on two machines behave as one because all state is in the cluster or in Redis.
 */
export interface HandlerContext {
  /**
   * Aborted when this reconcile's claim on its key is lost (lease renewal refused or unconfirmed,
   * deadline passed): stop and return. API requests (kube/raw.ts) and Redis scripts (queue/run-script.ts)
   * made inside the reconcile already fail once it is aborted; pass it to anything else that waits.
   */
  signal: AbortSignal;
  /** The claim's fencing token (queue/fence.ts), for state a handler writes with a fenced script. */
  token: string;
  kc: KubeConfig;
  /**
   * For reads. Handler state is written through `state`, never with this client directly: a write it
   * queued while cut off from Redis would land on reconnect, after a newer claim (docs/kernel.md, "Effects").
   */
  redis: RedisClient;
  /** Writes handler state on behalf of this claim, refused inside Redis once the claim is not the key's. */
  state: StateWriter;
  /** Prefix for every Redis key a handler writes. */
  prefix: string;
  log: Logger;
  now: () => Date;
  events: EventSink;
  /** Asks for a reconcile of a key of this or another function. */
  enqueue: (fn: string, key: string, delayMs?: number) => Promise<void>;
  /**
   * Sets a function's resync interval while Ripple runs (the autoscaler's GLOBAL_OPT_INTERVAL); a
   * no-op when it already has it. Resolves to whether it changed and what it was.
   */
  setResyncInterval: (fn: string, everyMs: number) => Promise<{ changed: boolean; previousMs: number | undefined }>;
  env: Readonly<Record<string, string | undefined>>;
}

export type Handler = (req: ReconcileRequest, ctx: HandlerContext) => Promise<ReconcileResult | void>;

/** Lookups a mapper may make in the watcher's stores (e.g. Deployment → the VAs that name it). */
export interface MapContext {
  /**
   * The objects of a resource in a namespace (all when none). A mapper whose function watches the
   * resource with a label selector passes that selector: the store of the watch with exactly that
   * selector answers, or an unselected watch's store filtered by it. Without a selector only an
   * unselected watch answers; when no watch fits, the answer is empty.
   */
  list(resource: ResourceRef, namespace?: string, labelSelector?: string): KubeObject[];
}

/** Turns one event into the keys to reconcile (the object, its owner, or anything custom). */
export type Mapper = (event: WatchEvent, ctx: MapContext) => string[];

/** One watch a function declares: controller-runtime's For/Owns/Watches. */
export interface Trigger {
  resource: ResourceRef;
  /** Limit to one namespace (e.g. the controller's ConfigMaps); a function of env so it is read at start. */
  namespace?: string;
  labelSelector?: string;
  /**
   * The resource may not be served (a CRD that is not installed, e.g. ServiceMonitor): while the API
   * server answers 404 the watch counts as synced and empty instead of down, and asks again later.
   */
  optional?: boolean;
  predicate?: Predicate;
  map: Mapper;
  /**
   * What of each object the watcher keeps for this trigger (watcher/projection.ts): metadata plus the
   * fields its predicate and mapper read, and what other mappers read of this resource through
   * MapContext.list. `ONLY_METADATA` also makes the watch metadata-only. Default: the whole object
   * without managedFields. A watch shared by several triggers keeps the union.
   */
  projection?: Projection;
  /**
   * A batch window (ms): a key this trigger asks for is reconciled this long after the event rather than at
   * once. The earliest request for a key wins (queue contract 4), so a burst of events for one key — the pods
   * of a ModelServing turning Ready one after another — ends in one reconcile at most this late instead of one
   * per event. The Kubernetes Job and EndpointSlice controllers batch their pod updates the same way. The window
   * is kept in the watcher (watcher/batch-window.ts). A key that is the event's own object on a trigger of the
   * function's primary resource is never held: it carries the object's resourceVersion to the run. Default:
   * none (at once).
   */
  batchMs?: number;
}

/** What a function's metrics and resync hooks may read (state lives in Redis, not the process). */
export interface MetricsDeps {
  redis: RedisClient;
  prefix: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** What a function's `sweep` may use. */
export interface SweepContext extends MetricsDeps {
  kc: KubeConfig;
  log: Logger;
  /**
   * Whether the primary object with this key is known to be gone: it is in this host's scope (its
   * namespace), it was absent from the resync's complete list of primaries, and a GET sent now answers
   * 404. The race rule: a sweep reads the version of a key's state *before* asking and deletes it
   * only if that version is unchanged *after* (compare-and-delete in one script). State of an object
   * created after the list is then safe: written before the GET, the GET finds the object; written
   * after it, the version has changed. Always false for a function without a primary.
   */
  gone: (key: string) => Promise<boolean>;
}

export interface FunctionDefinition {
  name: string;
  /**
   * The resource reconciled; the resync tick enqueues every object of it. Absent for a function fed
   * only by other functions (emit-events): it then has no resync tick.
   */
  primary?: ResourceRef;
  /**
   * Resync only primaries matching this label selector (ops-lifecycle: Pods with kusionstack.io/control=true),
   * so a function that owns a labelled slice of a big resource does not enqueue every object of it each tick.
   */
  primaryLabelSelector?: string;
  triggers: Trigger[];
  reconcile: Handler;
  /** Resync interval; default 60 s. A function may change it live (the autoscaler's GLOBAL_OPT_INTERVAL). */
  resyncIntervalMs?: number;
  /** Concurrent reconciles per worker process. */
  concurrency?: number;
  /**
   * How long one reconcile may run before the worker gives up on it and retries the key with backoff
   * (default 5 min). A bound for handlers whose calls cannot time out themselves (client-node's typed
   * clients set no timeout).
   */
  reconcileTimeoutMs?: number;
  /**
   * What the resync tick enqueues instead of every primary object. The autoscaler returns its one
   * global step (the optimization cycle, which then enqueues the VAs); emit-events, which has no
   * primary, returns the objects whose event requests are still waiting. A function with this and no
   * primary still gets a tick.
   */
  resyncKeys?: (deps: MetricsDeps) => Promise<string[]>;
  /**
   * Removes the Redis state this function keeps for objects that no longer exist (a delete missed
   * while no watcher led, or while every watcher was down); returns how many entries it removed. The
   * resync tick calls it after listing the primaries, and only when that whole list succeeded. See
   * `SweepContext.gone` for the rule that keeps it from removing state of an object created after the
   * list. A function without a primary (emit-events) is called with nothing ever `gone` and bounds
   * its state by age instead. Every function that keeps per-object Redis state has one
   * (docs/writing-a-function.md).
   */
  sweep?: (ctx: SweepContext) => Promise<number>;
  /** Registers the function's own collectors on the process registry that /metrics serves. */
  metrics?: (registry: Registry, deps: MetricsDeps) => void;
}
