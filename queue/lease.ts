import { setMaxListeners } from 'node:events';
import type { Logger } from '../base/log.js';
import type { RedisClient } from './connection.js';
import { scriptKeys, type QueueKeys } from './keys.js';
import { runScript } from './run-script.js';
import { RENEW } from './scripts.js';

/**
 * How long before its lease's confirmed end a claim stops sending (and its signal is aborted): the time a
 * request sent just before then needs to reach the API server or Redis and be applied. A tenth of the lease,
 * at most a second; docs/kernel.md ("Effects") gives the measurements it is chosen from.
 */
export function sendMarginMs(leaseMs: number): number {
  return Math.min(1_000, Math.floor(leaseMs / 10));
}

/** Renews a queue claim (RENEW): the key's active entry must still carry the token. */
export function queueRenewal(redis: RedisClient, keys: QueueKeys, key: string, token: string, leaseMs: number): () => Promise<boolean> {
  const args = [key, token, String(leaseMs)];
  return async () => (await runScript(redis, RENEW, scriptKeys(keys), args)) === 1;
}

/** Why a claim's handler was told to stop. */
export type LeaseLoss = 'refused' | 'expired' | 'deadline' | 'lock-lost';

/**
 * Keeps one claim's lease alive while its handler runs, and says when it is lost. The lease lives in
 * Redis (CLAIM set it, RENEW extends it) and is judged there by Redis's clock; this side renews every
 * third of the lease and, because a renewal it cannot confirm may not have happened, also stops
 * trusting the lease shortly before the last confirmed renewal would run out, by its own clock, counted
 * from when that renewal was sent (never later than Redis's view).
 */
export class ClaimLease {
  /**
   * Made on first use of `signal`: an AbortController costs ~5 µs to build on Node 20 (a worker's profile,
   * bench/README.md, "Round 6 of the queue"), and a reconcile that makes no API call never looks at its signal.
   */
  private controller: AbortController | undefined;
  private loss: LeaseLoss | undefined;
  private readonly onLoss: Array<() => void> = [];
  private renewTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  /** Local time by which the lease has surely run out in Redis unless renewed since. */
  private expiresAt: number;
  private stopped = false;

  constructor(
    /** Extends the lease in Redis by leaseMs; resolves to whether this claim still held it (queueRenewal). */
    private readonly extend: () => Promise<boolean>,
    private readonly key: string,
    readonly token: string,
    private readonly leaseMs: number,
    claimSentAt: number,
    private readonly log: Logger,
  ) {
    this.expiresAt = claimSentAt + leaseMs;
    this.armExpiry();
    this.renewTimer = setInterval(() => void this.renew(), Math.max(50, Math.floor(leaseMs / 3)));
  }

  /** Aborted, with the LeaseLoss as its reason, when the lease is lost. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      // Every API request the handler has in flight listens here until it ends (kube/raw.ts), and a
      // handler may run more than Node's default of 10 at once (MODELSERVING_APPLY_CONCURRENCY): not a leak.
      setMaxListeners(0, this.controller.signal);
      if (this.loss !== undefined) this.controller.abort(this.loss);
    }
    return this.controller.signal;
  }

  /** Why the lease was lost; undefined while it holds. */
  get lost(): LeaseLoss | undefined {
    return this.loss;
  }

  /** Calls `then` once, when the lease is lost (at once if it is already). */
  whenLost(then: () => void): void {
    if (this.loss !== undefined) then();
    else this.onLoss.push(then);
  }

  /**
   * Local time until which the lease may still be alive in Redis, however it was lost: the worker keeps
   * the key (no RELEASE) until then, so a request this claim sent just before the loss cannot land after a
   * new holder's claim. Freeing the key at once on a loss let the next holder plan while the stale write
   * was still in flight (issue 28).
   */
  get aliveUntil(): number {
    return this.expiresAt;
  }

  /**
   * Local time after which nothing may be sent on behalf of this claim (base/reconcile-scope.ts checks
   * it before every API request and Redis script): the lease's confirmed end less the send margin, the
   * time a request sent just before it needs to reach its server (docs/kernel.md, "Effects").
   */
  get sendBy(): number {
    return this.expiresAt - this.margin;
  }

  /** The send margin: a tenth of the lease, at most a second. */
  private get margin(): number {
    return sendMarginMs(this.leaseMs);
  }

  lose(reason: LeaseLoss): void {
    if (this.loss !== undefined) return;
    this.loss = reason;
    this.controller?.abort(reason);
    for (const then of this.onLoss.splice(0)) then();
    // No more renewals: a handler that does not stop lets the lease run out, and the key goes on.
    this.stop();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.renewTimer);
    clearTimeout(this.expiryTimer);
  }

  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    const margin = this.margin;
    this.expiryTimer = setTimeout(() => {
      this.log.warn({ key: this.key, fencingToken: this.token }, 'lease not renewed in time; aborting the reconcile');
      this.lose('expired');
    }, Math.max(0, this.expiresAt - margin - Date.now()));
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    const sentAt = Date.now();
    try {
      const held = await this.extend();
      if (this.stopped) return;
      if (!held) {
        this.log.warn({ key: this.key, fencingToken: this.token }, 'lease taken over by another claim; aborting the reconcile');
        this.lose('refused');
        return;
      }
      this.expiresAt = sentAt + this.leaseMs;
      this.armExpiry();
    } catch (err) {
      // Not confirmed: the expiry timer decides, from the last renewal that was.
      this.log.debug({ key: this.key, err: err instanceof Error ? err.message : String(err) }, 'lease renewal failed');
    }
  }
}
