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
