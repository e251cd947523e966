import type { KubeConfig } from '@kubernetes/client-node';
import type { Redis } from 'ioredis';
import type { KubeObject } from '../kube/object.js';
import type { ResourceRef } from '../kube/resources.js';
import type { WatchEvent } from '../watcher/events.js';
import type { Predicate } from '../watcher/predicates.js';
import type { EventSink } from './events.js';
import type { Logger } from './log.js';

/** Reconcile this object (by key: `namespace/name`, or `name` if cluster-scoped). */
export interface ReconcileRequest {
  key: string;
  namespace?: string;
  name: string;
  /** Why: event, resync, requeue, retry, dirty, manual. For logs only: handlers read fresh state. */
  reason: string;
}

export interface ReconcileResult {
  requeueAfterMs?: number;
}

/**
 * Everything external a handler may use. No module-level state anywhere in a function: two copies of
 * a function on two machines behave as one because all state is in the cluster or in Redis.
 */
export interface HandlerContext {
  kc: KubeConfig;
  redis: Redis;
  /** Prefix for every Redis key a handler writes. */
  prefix: string;
  log: Logger;
  now: () => Date;
  events: EventSink;
  /** Asks for a reconcile of a key of this or another function. */
  enqueue: (fn: string, key: string, delayMs?: number) => Promise<void>;
  env: Readonly<Record<string, string | undefined>>;
}

export type Handler = (req: ReconcileRequest, ctx: HandlerContext) => Promise<ReconcileResult | void>;

/** Lookups a mapper may make in the watcher's stores (e.g. Deployment → the VAs that name it). */
export interface MapContext {
  list(resource: ResourceRef, namespace?: string): KubeObject[];
}

/** Turns one event into the keys to reconcile (the object, its owner, or anything custom). */
export type Mapper = (event: WatchEvent, ctx: MapContext) => string[];

/** One watch a function declares: controller-runtime's For/Owns/Watches. */
export interface Trigger {
  resource: ResourceRef;
  /** Limit to one namespace (e.g. the controller's ConfigMaps); a function of env so it is read at start. */
  namespace?: string;
  labelSelector?: string;
  predicate?: Predicate;
  map: Mapper;
}

export interface FunctionDefinition {
  name: string;
  /** The resource reconciled; the resync tick enqueues every object of it. */
  primary: ResourceRef;
  triggers: Trigger[];
  reconcile: Handler;
  /** Resync interval; default 60 s. A function may change it live (the autoscaler's GLOBAL_OPT_INTERVAL). */
  resyncIntervalMs?: number;
  /** Concurrent reconciles per worker process. */
  concurrency?: number;
}
