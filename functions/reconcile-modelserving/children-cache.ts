/**
 * A worker-local cache of ModelServings and their children (pods, Services, ControllerRevisions), so a
 * reconcile plans from memory instead of a GET and three LISTs. One list-watch per resource and
 * namespace (the children's with the label every child carries, as the watcher's triggers), started on
 * first use and stopped when no reconcile has used it for IDLE_MS.
 *
 * The cache is an optimisation, never a source of truth the function depends on: it holds nothing
 * that is not in the cluster, and every reconcile that cannot prove it fresh enough lists instead.
 * Two rules keep it correct (docs/modelserving.md, "Performance"):
 *
 * 1. **Never older than our own last write** (controller-runtime's expectations, by resourceVersion):
 *    a reconcile records, per resource, the resourceVersion its creates and deletes were answered
 *    with (write-marks.ts, in Redis, so it holds across worker processes); the next reconcile uses a
 *    resource's cache only once that watch has seen that version — the watch delivers exactly that
 *    object's event, since everything we write carries the label it selects. A write whose version
 *    is not known (a 409, a 404, a lifecycle deletion) makes the next reconcile list. The same holds
 *    for the ModelServing: its status and finalizer patches are marks too, so a reconcile never plans
 *    from a ModelServing older than the last one this function wrote (whose status it compares
 *    against and whose resourceVersion its status patch is preconditioned on).
 * 2. **Never miss the event that triggered a reconcile**: the watcher's stream and this cache's are
 *    two streams; if this one lags, a reconcile woken by an event could plan without it and nothing
 *    would wake it again. So a child event that passes the function's own trigger predicates and is
 *    not followed, within LAG_CHECK_MS, by a cache read of its ModelServing in this process
 *    enqueues that ModelServing — only for ModelServings this process reconciled, and only once per
 *    burst; in the common case the watcher's own reconcile reads after the event and nothing is sent.
 *    A ModelServing event that passes the trigger predicate (a spec change, deletion starting) is such
 *    an event too: a reconcile that read the ModelServing before the cache had it is brought back.
 *
 * A ModelServing missing from the cache is asked of the API server (handler.ts): it is either gone or
 * newer than the cache, and only the API server can tell.
 */
import type { KubeConfig, V1ControllerRevision, V1Pod, V1Service } from '@kubernetes/client-node';
import type { KubeObject } from '../../kube/object.js';
import { Resources, type ResourceRef } from '../../kube/resources.js';
import { createLogger, type Logger } from '../../base/log.js';
import { NamespacedCaches } from '../../runtime/namespaced-caches.js';
import type { WatchEvent } from '../../watcher/events.js';
import { ListWatch } from '../../watcher/list-watch.js';
import { onlyEvents, passes, type Predicate } from '../../watcher/predicates.js';
import { keepFields, type Projection } from '../../watcher/projection.js';
import type { Children } from './observe.js';
import { LABEL_NAME } from './plan/names.js';
import { CHILDREN_SELECTOR, modelServingChanged, podFactsChanged, serviceChanged } from './triggers.js';
import { isNewer } from '../../kube/resource-version.js';
import { CACHED_RESOURCES, type CachedResource, type ChildResource, type WriteMarks } from './write-marks.js';

/** A cache no reconcile used for this long stops its watches. */
export const IDLE_MS = 5 * 60_000;
/** How long after a child event a cache read of its ModelServing is expected (rule 2). */
export const LAG_CHECK_MS = 1_000;
/**
 * How long a reconcile waits for the cache to reach its last write (or, in a cache's first CATCH_UP_MS,
 * its first lists) before it reads from the API server instead.
 */
export const CATCH_UP_MS = 2_000;

interface Watched {
  resource: ResourceRef;
  /** What the planner and the status read of each child. */
  projection: Projection | undefined;
  /** The function's own trigger predicate for this resource (definition.ts). */
  predicate: Predicate | undefined;
  /** Children are selected by the label every one of them carries; ModelServings are all watched. */
  labelSelector: string | undefined;
  /** The ModelServing an object belongs to (rule 2, reads). */
  ownerOf: (o: KubeObject) => string | undefined;
}

const byLabel = (o: KubeObject) => o.metadata.labels?.[LABEL_NAME];

const WATCHED: Record<CachedResource, Watched> = {
  pods: {
    resource: Resources.pod,
    labelSelector: CHILDREN_SELECTOR,
    ownerOf: byLabel,
    // plan/observed.ts podFacts (nodeName, schedulerName, GROUP_SIZE in the containers' env) and the
    // status conditions and container states unified-status.ts classifies.
    projection: keepFields('spec.nodeName', 'spec.schedulerName', 'spec.containers', 'status'),
    predicate: podFactsChanged,
  },
  services: { resource: Resources.service, projection: undefined, predicate: serviceChanged, labelSelector: CHILDREN_SELECTOR, ownerOf: byLabel },
  // The planner reads a revision's data (the templates of older revisions).
  controllerrevisions: { resource: Resources.controllerRevision, projection: undefined, predicate: onlyEvents('delete'), labelSelector: CHILDREN_SELECTOR, ownerOf: byLabel },
  // The whole object (spec, status, metadata) less managedFields: the reconcile plans from it as from a GET.
  modelservings: { resource: Resources.modelServing, projection: undefined, predicate: modelServingChanged, labelSelector: undefined, ownerOf: (o) => o.metadata.name },
};

type Versions = Partial<Record<CachedResource, string>>;

/** What a reconcile plans from: the ModelServing as the cache holds it (undefined: not in the cache), and its children. */
export interface CachedView extends Children {
  modelServing: KubeObject | undefined;
}

export class ChildrenCache {
  private readonly watches = new Map<CachedResource, ListWatch>();
  /** Per ModelServing, the version each watch had reached when a reconcile last read it. */
  private readonly lastRead = new Map<string, Versions>();
  /** Per ModelServing, the newest version of a relevant child event per resource since its last check, and when the last arrived. */
  private readonly pending = new Map<string, { versions: Versions; lastAt: number }>();
  /** How often rule 2 brought a ModelServing back (for the benchmark and tests). */
  lateEnqueues = 0;
  private readonly checks = new Map<string, NodeJS.Timeout>();
  private enqueue: ((key: string) => Promise<void>) | undefined;
  private lastUsed = Date.now();
  private readonly startedAt = Date.now();
  private readonly idle: NodeJS.Timeout;
  private stopped = false;

  constructor(
    kc: KubeConfig,
    private readonly namespace: string,
    private readonly log: Logger,
    private readonly onStop: () => void,
  ) {
    for (const kind of CACHED_RESOURCES) {
      const w = WATCHED[kind];
      this.watches.set(
        kind,
        new ListWatch({
          kc,
          resource: w.resource,
          namespace,
          ...(w.labelSelector !== undefined ? { labelSelector: w.labelSelector } : {}),
          log,
          ...(w.projection ? { projection: w.projection } : {}),
          onEvent: async (e) => this.onEvent(kind, w, e),
        }),
      );
    }
    this.idle = setInterval(() => {
      if (Date.now() - this.lastUsed >= IDLE_MS) void this.stop();
      else this.prune();
    }, IDLE_MS / 5);
    this.idle.unref();
  }

  /** Every watch listed and streaming. */
  ready(): boolean {
    return [...this.watches.values()].every((w) => {
      const h = w.health();
      return h.synced && h.up;
    });
  }

  /** Whether each resource's watch has seen at least the version of our last write to it. */
  caughtUp(marks: WriteMarks): boolean {
    if (marks.unknown || this.stopped || !this.ready()) return false;
    return CACHED_RESOURCES.every((kind) => {
      const written = marks.versions[kind];
      if (written === undefined) return true;
      const seen = this.watches.get(kind)?.health().resourceVersion;
      return seen !== undefined && !isNewer(written, seen);
    });
  }

  /**
   * Waits up to `timeoutMs` for `caughtUp(marks)`; false if it did not happen. A cache that is not ready
   * is waited for only in its first CATCH_UP_MS (its first lists: cheaper than every reconcile started
   * meanwhile listing on its own); one that went down later, or never came up, is not.
   */
  async waitFor(marks: WriteMarks, timeoutMs = CATCH_UP_MS): Promise<boolean> {
    this.lastUsed = Date.now();
    const deadline = Date.now() + timeoutMs;
    while (!this.caughtUp(marks)) {
      if (marks.unknown || this.stopped || Date.now() >= deadline) return false;
      if (!this.ready() && Date.now() - this.startedAt >= CATCH_UP_MS) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    return true;
  }

  /**
   * ModelServing `name` and its children, as the cache holds them now. `enqueue` is how rule 2 brings
   * the ModelServing back if an event of it or a child turns up after this read without a read following it.
   */
  read(name: string, enqueue: (key: string) => Promise<void>): CachedView {
    this.lastUsed = Date.now();
    this.enqueue = enqueue;
    const seen: Versions = {};
    for (const [kind, watch] of this.watches) {
      const v = watch.health().resourceVersion;
      if (v !== undefined) seen[kind] = v;
    }
    this.lastRead.set(name, seen);
    const of = <T>(kind: ChildResource): T[] =>
      (this.watches.get(kind)?.store.list(this.namespace) ?? []).filter((o) => o.metadata.labels?.[LABEL_NAME] === name) as T[];
    return {
      modelServing: this.watches.get('modelservings')?.store.get(`${this.namespace}/${name}`),
      pods: of<V1Pod>('pods'),
      services: of<V1Service>('services'),
      controllerRevisions: of<V1ControllerRevision>('controllerrevisions'),
    };
  }

  /**
   * A reconcile of `name` listed instead (the cache was behind): events up to the lists' versions were
   * seen by it, so rule 2 need not bring the ModelServing back for them.
   */
  noteListed(name: string, listedAt: Versions): void {
    // (The ModelServing's "list" version is the resourceVersion of the object a GET returned: only its
    // own events are its, and they come in that object's version order.)
    // A cache that is not ready (its watches keep failing, e.g. refused by RBAC) is not being used:
    // only a ready one is kept alive by listing reconciles, so a broken one stops at the idle tick.
    if (this.ready()) this.lastUsed = Date.now();
    const read = this.lastRead.get(name);
    if (read === undefined) return; // never read from the cache here: rule 2 does not watch it yet
    for (const kind of CACHED_RESOURCES) {
      const v = listedAt[kind];
      const r = read[kind];
      if (v !== undefined && (r === undefined || isNewer(v, r))) read[kind] = v;
    }
  }

  /** The ModelServing is gone: nothing to bring back for it. */
  forget(name: string): void {
    this.lastRead.delete(name);
    this.pending.delete(name);
    clearTimeout(this.checks.get(name));
    this.checks.delete(name);
  }

  /**
   * Drops the rule-2 bookkeeping of ModelServings that have no children in the cache and no check
   * pending (deleted ones whose forget never ran here, e.g. deleted while another process reconciled).
   * A ModelServing read again afterwards is tracked again from that read.
   */
  prune(): void {
    const owners = new Set<string>();
    for (const [kind, watch] of this.watches) {
      if (kind === 'modelservings') continue; // bookkeeping is kept for ModelServings with children
      for (const o of watch.store.list(this.namespace)) {
        const owner = WATCHED[kind].ownerOf(o);
        if (owner) owners.add(owner);
      }
    }
    for (const name of new Set([...this.lastRead.keys(), ...this.pending.keys()])) {
      if (!owners.has(name) && !this.checks.has(name)) {
        this.lastRead.delete(name);
        this.pending.delete(name);
      }
    }
  }

  /** How many ModelServings rule 2 keeps bookkeeping for (tests). */
  get tracked(): number {
    return new Set([...this.lastRead.keys(), ...this.pending.keys()]).size;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.idle);
    for (const t of this.checks.values()) clearTimeout(t);
    this.checks.clear();
    this.onStop();
    await Promise.all([...this.watches.values()].map((w) => w.stop()));
  }

  private onEvent(kind: CachedResource, w: Watched, e: WatchEvent): void {
    const object: KubeObject = e.object;
    const name = w.ownerOf(object);
    // Rule 2 concerns ModelServings this process plans from the cache, and events that wake them.
    if (!name || !this.lastRead.has(name) || !passes(w.predicate, e)) return;
    // Events are handed over after the store took them in, so a read can have seen an event before
    // it arrives here: what decides is the version, not the order. A delete a relist inferred carries
    // the object's old version; the list's is when the store learnt of it.
    const watched = this.watches.get(kind)?.health().resourceVersion;
    const version = (e.type === 'delete' && e.synthetic ? watched : object.metadata.resourceVersion) ?? watched;
    if (version === undefined) return;
    const pending = this.pending.get(name) ?? { versions: {}, lastAt: 0 };
    const before = pending.versions[kind];
    if (before === undefined || isNewer(version, before)) pending.versions[kind] = version;
    pending.lastAt = Date.now();
    this.pending.set(name, pending);
    if (!this.checks.has(name)) this.scheduleCheck(name, LAG_CHECK_MS);
  }

  private scheduleCheck(name: string, afterMs: number): void {
    const timer = setTimeout(() => {
      this.checks.delete(name);
      const read = this.lastRead.get(name);
      const events = this.pending.get(name);
      if (read === undefined || events === undefined || !this.enqueue) {
        this.pending.delete(name);
        return;
      }
      const unseen = CACHED_RESOURCES.some((k) => {
        const v = events.versions[k];
        const r = read[k];
        return v !== undefined && (r === undefined || isNewer(v, r));
      });
      if (!unseen) {
        this.pending.delete(name);
        return;
      }
      // The newest event is recent: give the reconcile the watcher woke for it its time first.
      const waited = Date.now() - events.lastAt;
      if (waited < LAG_CHECK_MS) {
        this.scheduleCheck(name, LAG_CHECK_MS - waited);
        return;
      }
      this.pending.delete(name);
      this.lateEnqueues++;
      // No reconcile read this ModelServing since the event: the one the watcher woke may have planned
      // without it. Bring it back.
      this.log.debug({ modelServing: `${this.namespace}/${name}` }, 'child event not yet seen by a reconcile; enqueueing');
      // Failing here is the host shutting down (its Redis closed) or Redis being away: the watcher's own
      // enqueue of the same event, or the resync tick, brings the ModelServing back then.
      this.enqueue(`${this.namespace}/${name}`).catch((err: unknown) => this.log.info({ err: String(err) }, 'enqueue after a late child event failed'));
    }, afterMs);
    timer.unref();
    this.checks.set(name, timer);
  }
}

const caches = new NamespacedCaches<ChildrenCache>();

/**
 * The cache of `namespace`'s ModelServings and children for this KubeConfig, started on first use. The logger is
 * a base one, not the calling reconcile's (whose key it would carry). `watchKc` is what its watches connect with
 * (default `kc`): a test routes them through a proxy it can hold, to make the cache lag on purpose.
 */
export function childrenCacheFor(kc: KubeConfig, namespace: string, log: Logger = baseLog(), watchKc: KubeConfig = kc): ChildrenCache {
  return caches.get(kc, namespace, (onStop) => new ChildrenCache(watchKc, namespace, log.child({ cache: 'modelserving-children', namespace }), onStop));
}

/** The running cache of `namespace` for this KubeConfig, without starting one. */
export function peekChildrenCache(kc: KubeConfig, namespace: string): ChildrenCache | undefined {
  return caches.peek(kc, namespace);
}

let base: Logger | undefined;
/** A logger without any reconcile's bindings, for the process-wide caches. */
function baseLog(): Logger {
  return (base ??= createLogger('reconcile-modelserving'));
}

/**
 * Stops every cache of this process now (their watches keep the event loop alive until IDLE_MS has
 * passed otherwise): for a process that ends on its own rather than by exiting, like a benchmark.
 */
/** How often rule 2 enqueued a ModelServing, over the running caches of this process (the benchmark reports it). */
export function lateEnqueuesTotal(): number {
  return caches.running().reduce((n, c) => n + c.lateEnqueues, 0);
}

export async function stopChildrenCaches(): Promise<void> {
  await caches.stopAll();
}
