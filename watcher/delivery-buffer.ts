import { appendFolded, foldAll } from './coalesce.js';
import { DEFAULT_RECONNECT, ReconnectBackoff, type ReconnectBackoffOptions } from './backoff.js';
import type { WatchEvent } from './events.js';

export interface DeliveryBufferOptions {
  /** Failures of one key, specific to it, after which its event is dead-lettered (default 5). */
  maxAttempts: number;
  /** Backoff between attempts of one failing key, while other keys go on (default 0.8 → 30 s). */
  keyBackoff: ReconnectBackoffOptions;
}

export const DEFAULT_DELIVERY: DeliveryBufferOptions = { maxAttempts: 5, keyBackoff: DEFAULT_RECONNECT };

/** What to do after a failed delivery. */
export type FailureVerdict =
  /** The consumer looks down (a transient error and no sign others get through): hold everything, retry this first. */
  | { action: 'hold' }
  /** The failure belongs to this key: it waits `retryInMs`, other keys go on. */
  | { action: 'retry-key'; attempts: number; retryInMs: number }
  /** This key failed `attempts` times on its own: its event is given up (the caller logs and reports it). */
  | { action: 'dead-letter'; attempts: number; event: WatchEvent };

interface Entry {
  /** Undelivered events of the key, oldest first, folded (coalesce.ts). */
  events: WatchEvent[];
  inFlight: boolean;
  /** Failures counted against this key. */
  attempts: number;
  retryAt: number;
  /** `successes` at this key's last failure: a success since then shows the consumer works for others. */
  failedAtSuccess?: number;
  backoff: ReconnectBackoff;
}

/**
 * The events a watch has seen and not yet handed on, per object key (client-go's DeltaFIFO, folded):
 * while delivery is stuck it holds at most a few events per key however many arrive, so memory is
 * bounded by the number of distinct objects, not of events. Keys are handed out oldest first, one
 * event of a key at a time (never two of one key in flight), and a key whose own delivery keeps
 * failing waits on its own backoff while the others flow. Pure: no I/O, the caller passes the time.
 */
export class DeliveryBuffer {
  private readonly entries = new Map<string, Entry>();
  private successes = 0;
  private count = 0;
  private readonly opts: DeliveryBufferOptions;

  constructor(
    opts: Partial<DeliveryBufferOptions> = {},
    private readonly random: () => number = Math.random,
  ) {
    this.opts = { ...DEFAULT_DELIVERY, ...opts };
  }

  /** Events waiting or in flight. */
  get size(): number {
    return this.count;
  }

  /** Keys with events waiting or in flight. */
  get keys(): number {
    return this.entries.size;
  }

  push(key: string, event: WatchEvent): void {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { events: [], inFlight: false, attempts: 0, retryAt: 0, backoff: new ReconnectBackoff(this.opts.keyBackoff, this.random) };
      this.entries.set(key, entry);
    }
    this.setEvents(entry, appendFolded(entry.events, event));
  }

  /** The oldest key's next event that may go now; it is in flight until succeeded() or failed(). */
  take(now: number): { key: string; event: WatchEvent } | undefined {
    for (const [key, entry] of this.entries) {
      if (entry.inFlight || entry.retryAt > now || entry.events.length === 0) continue;
      entry.inFlight = true;
      const [event, ...rest] = entry.events;
      entry.events = rest;
      return { key, event: event! };
    }
    return undefined;
  }

  /** When the earliest key waiting on its own backoff may go again (undefined: none waits). */
  nextRetryAt(): number | undefined {
    let at: number | undefined;
    for (const entry of this.entries.values()) {
      if (entry.inFlight || entry.events.length === 0 || entry.retryAt === 0) continue;
      at = at === undefined ? entry.retryAt : Math.min(at, entry.retryAt);
    }
    return at;
  }

  succeeded(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.successes++;
    this.count--;
    entry.inFlight = false;
    entry.attempts = 0;
    entry.retryAt = 0;
    entry.failedAtSuccess = undefined;
    entry.backoff.reset();
    // To the back of the line: a key that keeps changing must not starve the others.
    this.entries.delete(key);
    if (entry.events.length > 0) this.entries.set(key, entry);
  }

  /**
   * Records a failed delivery of `event` (the one take() gave for `key`). `transient` says the error
   * looks like the consumer being down (Redis unreachable, READONLY, …) rather than this key's own.
   * A transient error with no success of another key since this key last failed holds everything,
   * as the watch always did; otherwise the failure is the key's: it is counted, the key backs off
   * alone, and after maxAttempts its event is dead-lettered.
   */
  failed(key: string, event: WatchEvent, transient: boolean, now: number): FailureVerdict {
    const entry = this.entries.get(key);
    if (!entry) return { action: 'hold' };
    entry.inFlight = false;
    // Back in front of what came since, folded with it: the retry carries the newest state.
    this.setEvents(entry, foldAll([event, ...entry.events]), -1);
    const othersFlow = entry.failedAtSuccess !== undefined && this.successes > entry.failedAtSuccess;
    entry.failedAtSuccess = this.successes;
    if (transient && !othersFlow) return { action: 'hold' };
    entry.attempts++;
    if (entry.attempts >= this.opts.maxAttempts) {
      const [dead, ...rest] = entry.events;
      const attempts = entry.attempts;
      this.count--;
      entry.attempts = 0;
      entry.retryAt = 0;
      entry.failedAtSuccess = undefined;
      entry.backoff.reset();
      entry.events = rest;
      if (rest.length === 0) this.entries.delete(key);
      return { action: 'dead-letter', attempts, event: dead! };
    }
    const retryInMs = entry.backoff.next(now);
    entry.retryAt = now + retryInMs;
    return { action: 'retry-key', attempts: entry.attempts, retryInMs };
  }

  /** Replaces an entry's events, keeping `count` right; `inFlightDelta` accounts for an event taken out. */
  private setEvents(entry: Entry, events: WatchEvent[], inFlightDelta = 0): void {
    this.count += events.length - entry.events.length + inFlightDelta;
    entry.events = events;
  }
}
