/**
 * Reconnect backoff as client-go's reflector and kube-rs's watcher do it: 800 ms doubling to 30 s,
 * with full jitter on top so many replicas that lost the API server together do not return together.
 */
export interface ReconnectBackoffOptions {
  initialMs: number;
  maxMs: number;
  /** After this long without failure, start again from `initialMs`. */
  resetAfterMs: number;
}

export const DEFAULT_RECONNECT: ReconnectBackoffOptions = { initialMs: 800, maxMs: 30_000, resetAfterMs: 120_000 };

export class ReconnectBackoff {
  private failures = 0;
  private lastFailureAt = 0;

  constructor(
    private readonly opts: ReconnectBackoffOptions = DEFAULT_RECONNECT,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt after a failure at `now`. */
  next(now: number): number {
    if (now - this.lastFailureAt > this.opts.resetAfterMs) this.failures = 0;
    this.lastFailureAt = now;
    const base = Math.min(this.opts.maxMs, this.opts.initialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    // Jitter factor 1.0 (client-go's): somewhere between base and 2·base, never past the cap.
    return Math.min(this.opts.maxMs, base * (1 + this.random()));
  }

  reset(): void {
    this.failures = 0;
  }
}

/** A watch shorter than this with nothing on it ended "at once" (client-go's reflector uses 1 s). */
export const SHORT_WATCH_MS = 1000;

/**
 * Whether a watch that ended without an error should be followed by a backoff rather than an
 * immediate new watch: it carried no line at all (not even a bookmark) and lasted under `shortMs`.
 * A server or proxy that closes every watch at once would otherwise be asked again in a hot loop;
 * a watch that ended at its timeout, or carried anything, is resumed at once.
 */
export function closedAtOnce(lastedMs: number, lines: number, shortMs = SHORT_WATCH_MS): boolean {
  return lines === 0 && lastedMs < shortMs;
}
