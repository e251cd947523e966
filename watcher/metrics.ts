import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The watcher's own metrics, labelled by resource (group/version/kind as resourceId gives it). Several
 * watches of one resource (different selectors or namespaces) add up under one label: the buffered
 * gauge is moved by increments, never set, for that reason. One instance per process and registry.
 */
export class WatchMetrics {
  /** Events seen and not yet handed to the queue (bounded by distinct keys: watcher/delivery-buffer.ts). */
  readonly buffered: Gauge<'resource'>;
  /** Events given up after a key failed on its own maxAttempts times (a poison key). */
  readonly deadLetters: Counter<'resource'>;
  /** Full lists made: 1 per watch at start, one more per 410 or lost resourceVersion. */
  readonly relists: Counter<'resource'>;
  /** Bookmarks received: each moves the resourceVersion a reconnect resumes from. */
  readonly bookmarks: Counter<'resource'>;
  /** Keys waiting in a trigger's batch window for their one enqueue (watcher/batch-window.ts). */
  readonly batched: Gauge<'function'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.buffered = new Gauge({ name: 'ripple_watch_buffered_events', help: 'Watch events seen and not yet enqueued, after coalescing per object', labelNames: ['resource'], registers });
    this.deadLetters = new Counter({ name: 'ripple_watch_dead_letters_total', help: 'Watch events given up after their key failed to enqueue on its own too many times', labelNames: ['resource'], registers });
    this.relists = new Counter({ name: 'ripple_watch_relists_total', help: 'Full lists made by the watcher (one at start, one per expired resourceVersion)', labelNames: ['resource'], registers });
    this.bookmarks = new Counter({ name: 'ripple_watch_bookmarks_total', help: 'Watch bookmarks received', labelNames: ['resource'], registers });
    this.batched = new Gauge({ name: 'ripple_watch_batched_keys', help: "Keys waiting in a trigger's batch window for their one enqueue", labelNames: ['function'], registers });
  }
}
