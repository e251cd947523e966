import type { Gauge } from 'prom-client';
import type { Logger } from '../base/log.js';
import { ReconnectBackoff, type ReconnectBackoffOptions } from './backoff.js';
import { isTransientSinkError } from './sink-errors.js';

/**
 * The watcher's side of a trigger's batch window (Trigger.batchMs): the first event for a (function, key)
 * opens a window, the events after it for the same key fold into it here, and when the window ends the key
 * is enqueued once, due at once.
 *
 * Why here and not as a delayed job: enqueueing every event with the window as its delay folded them in
 * Redis, but each still cost an ENQUEUE script — 450 of them for 54 reconciles in a 20-ModelServing
 * converge, where the pods of a ModelServing turn Ready one after another (bench/README.md, "Round 5").
 *
 * Why folding is safe: the one enqueue goes out after the last event it stands for arrived, so the run it
 * wakes reads state at least that new (queue contract 2). A window lives in this process only, like
 * client-go's AddAfter: if the process dies inside it, its events are covered by the replay every
 * watcher makes when it takes over (Watcher.replayAll). An enqueue that fails is tried again with backoff
 * while this watcher leads; a key that keeps failing on its own is given up after `maxAttempts`, as the
 * watch's delivery does.
 */
export interface BatchWindowOptions {
  enqueue: (fn: string, key: string, reason: string) => Promise<void>;
  /** Only the leader enqueues; a window that ends while following is dropped (the leader replays). */
  isLeader: () => boolean;
  log: Logger;
  backoff?: ReconnectBackoffOptions;
  /** Failures of a key on its own before it is given up (default 10). */
  maxAttempts?: number;
  /** Called when a key is given up. */
  onGiveUp?: (fn: string, key: string, err: unknown) => void;
  /** Keys waiting in a window, per function (ripple_watch_batched_keys). */
  gauge?: Pick<Gauge<'function'>, 'inc' | 'dec'>;
}

interface Window {
  fn: string;
  key: string;
  reason: string;
  timer: NodeJS.Timeout;
  /** Events folded into this window (the first included). */
  events: number;
  ownFailures: number;
  backoff?: ReconnectBackoff;
}

export class BatchWindow {
  private readonly open = new Map<string, Window>();
  private stopped = false;

  constructor(private readonly opts: BatchWindowOptions) {}

  /** An event asks for `key` within `windowMs`: opens a window, or folds into the open one. */
  add(fn: string, key: string, reason: string, windowMs: number): void {
    if (this.stopped) return;
    const id = `${fn}\n${key}`;
    const open = this.open.get(id);
    if (open) {
      open.events++;
      return;
    }
    const w: Window = { fn, key, reason, events: 1, ownFailures: 0, timer: setTimeout(() => void this.flush(id, w), windowMs) };
    this.keep(id, w);
  }

  /** Windows open now (events waiting for their key's one enqueue). */
  get size(): number {
    return this.open.size;
  }

  /** Ends every window at once and enqueues its key (a clean shutdown hands on what it holds). */
  async stop(): Promise<void> {
    this.stopped = true;
    const windows = [...this.open.entries()];
    for (const [id, w] of windows) {
      clearTimeout(w.timer);
      this.drop(id, w);
    }
    if (!this.opts.isLeader()) return;
    await Promise.all(
      windows.map(([, w]) =>
        this.opts.enqueue(w.fn, w.key, w.reason).catch((err: unknown) => this.opts.log.warn({ function: w.fn, key: w.key, err: String(err) }, 'batch window: could not enqueue at shutdown; the next leader replays it')),
      ),
    );
  }

  private async flush(id: string, w: Window): Promise<void> {
    if (this.open.get(id) !== w) return;
    // Events that come while this enqueue is in flight open a new window: this one may already have been
    // read by the run it wakes.
    this.drop(id, w);
    if (!this.opts.isLeader()) return;
    try {
      await this.opts.enqueue(w.fn, w.key, w.reason);
    } catch (err) {
      if (this.stopped || !this.opts.isLeader()) return;
      const transient = isTransientSinkError(err);
      if (!transient && ++w.ownFailures >= (this.opts.maxAttempts ?? 10)) {
        this.opts.log.error({ function: w.fn, key: w.key, attempts: w.ownFailures, err: String(err) }, 'batch window: gave up a key that failed to enqueue on its own repeatedly');
        this.opts.onGiveUp?.(w.fn, w.key, err);
        return;
      }
      w.backoff ??= new ReconnectBackoff(this.opts.backoff);
      const delay = w.backoff.next(Date.now());
      this.opts.log.warn({ function: w.fn, key: w.key, events: w.events, retryInMs: Math.round(delay), err: String(err) }, 'batch window: could not enqueue; retrying');
      // Back in the map, so events meanwhile fold into the retry instead of opening a window of their own.
      const again = this.open.get(id);
      if (again) {
        again.events += w.events;
        return;
      }
      w.timer = setTimeout(() => void this.flush(id, w), delay);
      this.keep(id, w);
    }
  }

  private keep(id: string, w: Window): void {
    this.open.set(id, w);
    this.opts.gauge?.inc({ function: w.fn });
  }

  private drop(id: string, w: Window): void {
    if (this.open.get(id) !== w) return;
    this.open.delete(id);
    this.opts.gauge?.dec({ function: w.fn });
  }
}
