import type { Logger } from '../base/log.js';
import { DEFAULT_RECONNECT, ReconnectBackoff, type ReconnectBackoffOptions } from './backoff.js';
import { DeliveryBuffer, type DeliveryBufferOptions } from './delivery-buffer.js';
import type { WatchEvent } from './events.js';
import type { WatchMetrics } from './metrics.js';
import { isTransientSinkError } from './sink-errors.js';
import { storeKey } from './store.js';

export interface DeliveryPumpOptions {
  /** resourceId of the watched resource, for logs and metrics. */
  resource: string;
  deliver: (event: WatchEvent) => Promise<void>;
  log: Logger;
  /** Backoff while the consumer is down (every key held), default 0.8 → 30 s. */
  backoff?: ReconnectBackoffOptions;
  delivery?: Partial<DeliveryBufferOptions>;
  /** Told when an event is given up, after it was logged and counted; its errors are logged, not thrown. */
  onDeadLetter?: (event: WatchEvent, err: unknown, attempts: number) => Promise<void>;
  metrics?: WatchMetrics;
  /** The consumer is down (the watch reports it for /readyz) / works again. */
  onDown: (why: string) => void;
  onUp: () => void;
}

/**
 * Hands a watch's events on, one at a time, from a DeliveryBuffer: the watch stream never waits on
 * the consumer, and what piles up while the consumer is stuck is folded per key. While the consumer
 * is down everything is held and retried with backoff (nothing dropped); a key whose delivery fails
 * on its own backs off alone and, after a bounded number of attempts, is dead-lettered.
 */
export class DeliveryPump {
  private readonly buffer: DeliveryBuffer;
  private stopped = false;
  private kick?: () => void;
  private readonly wakers = new Set<() => void>();
  private drainWaiters: Array<() => void> = [];
  private readonly loop: Promise<void>;

  constructor(private readonly opts: DeliveryPumpOptions) {
    this.buffer = new DeliveryBuffer(opts.delivery);
    this.loop = this.run();
  }

  get buffered(): number {
    return this.buffer.size;
  }

  push(event: WatchEvent): void {
    if (this.stopped) return;
    this.track(() => this.buffer.push(storeKey(event.object), event));
    this.kick?.();
  }

  /** Resolves when nothing is buffered (or the pump stops). */
  drained(): Promise<void> {
    if (this.buffer.size === 0 || this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of this.wakers) wake();
    await this.loop;
    this.opts.metrics?.buffered.dec({ resource: this.opts.resource }, this.buffer.size);
    this.settleDrained();
  }

  private async run(): Promise<void> {
    const down = new ReconnectBackoff(this.opts.backoff ?? DEFAULT_RECONNECT);
    let isDown = false;
    while (!this.stopped) {
      const next = this.buffer.take(Date.now());
      if (!next) {
        this.settleDrained();
        await this.pause(this.buffer.nextRetryAt(), true);
        continue;
      }
      try {
        await this.opts.deliver(next.event);
        this.track(() => this.buffer.succeeded(next.key));
        down.reset();
        if (isDown) this.opts.onUp();
        isDown = false;
      } catch (err) {
        if (this.stopped) break;
        const verdict = this.track(() => this.buffer.failed(next.key, next.event, isTransientSinkError(err), Date.now()));
        const context = { resource: this.opts.resource, key: next.key, event: next.event.type, err: String(err) };
        if (verdict.action === 'hold') {
          const delay = down.next(Date.now());
          isDown = true;
          this.opts.onDown(`delivery: ${String(err)}`);
          this.opts.log.warn({ ...context, retryInMs: Math.round(delay) }, 'could not hand a watch event on; holding every key and retrying');
          await this.pause(Date.now() + delay, false);
        } else if (verdict.action === 'retry-key') {
          this.opts.log.warn({ ...context, attempts: verdict.attempts, retryInMs: Math.round(verdict.retryInMs) }, 'could not hand a watch event on for this key; retrying it alone, other keys go on');
        } else {
          this.opts.metrics?.deadLetters.inc({ resource: this.opts.resource });
          this.opts.log.error({ ...context, attempts: verdict.attempts }, 'gave up a watch event after its key failed on its own repeatedly (dead-lettered); the next change or resync of the object tries again');
          await this.opts.onDeadLetter?.(verdict.event, err, verdict.attempts).catch((e: unknown) => this.opts.log.error({ ...context, err: String(e) }, 'could not report a dead-lettered watch event'));
        }
      }
    }
    this.settleDrained();
  }

  /** Runs a buffer change and moves the buffered gauge by what it changed. */
  private track<T>(change: () => T): T {
    const before = this.buffer.size;
    const result = change();
    const delta = this.buffer.size - before;
    if (delta > 0) this.opts.metrics?.buffered.inc({ resource: this.opts.resource }, delta);
    else if (delta < 0) this.opts.metrics?.buffered.dec({ resource: this.opts.resource }, -delta);
    return result;
  }

  private settleDrained(): void {
    if (this.buffer.size > 0 && !this.stopped) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Waits until `until` (forever when undefined), stop(), or — when `onPush` — the next push. */
  private pause(until: number | undefined, onPush: boolean): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        if (this.kick === wake) this.kick = undefined;
        resolve();
      };
      const timer = until === undefined ? undefined : setTimeout(wake, Math.max(0, until - Date.now()));
      this.wakers.add(wake);
      if (onPush) this.kick = wake;
    });
  }
}
