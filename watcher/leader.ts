import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { isStatus, kubeRequest } from '../kube/raw.js';
import { objectPath, collectionPath, Resources } from '../kube/resources.js';
import type { Logger } from '../base/log.js';

const leaseSchema = z
  .object({
    metadata: z.object({ name: z.string(), namespace: z.string().optional(), resourceVersion: z.string().optional() }).passthrough(),
    spec: z
      .object({
        holderIdentity: z.string().nullish(),
        leaseDurationSeconds: z.number().nullish(),
        acquireTime: z.string().nullish(),
        renewTime: z.string().nullish(),
        leaseTransitions: z.number().nullish(),
      })
      .passthrough()
      .default({}),
  })
  .passthrough();
type Lease = z.infer<typeof leaseSchema>;

/** Lease times are MicroTime: RFC 3339 with exactly six fractional digits (the typed client sends three, which is refused). */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface LeaderElectionOptions {
  kc: KubeConfig;
  namespace: string;
  name: string;
  identity: string;
  /** controller-runtime's defaults: 15 s lease, 10 s renew deadline, 2 s retry. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  onStartedLeading?: () => void;
  onStoppedLeading?: () => void;
}

/**
 * Lease-based leader election (coordination.k8s.io/v1), as client-go's leaderelection does it:
 * a lease is taken over only after it has not changed for a full lease duration as observed by this
 * process's own clock (no trust in other machines' clocks), every write carries the resourceVersion
 * it read, and a leader that cannot renew within the renew deadline steps down before its lease can
 * expire for others. On stop it releases the lease so a follower takes over at once.
 */
export class LeaderElector {
  private leading = false;
  private stopped = false;
  private observed?: { record: string; at: number };
  /** When the last successful write was sent (not answered): the lease is ours from no later than this. */
  private lastRenew = 0;
  /** A write was sent whose outcome may have made us the holder (stop() then checks and releases). */
  private mayHold = false;
  private timer?: NodeJS.Timeout;
  private deadlineTimer?: NodeJS.Timeout;
  private inflight?: Promise<void>;
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private readonly retryMs: number;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.leaseMs = opts.leaseDurationMs ?? 15_000;
    this.renewMs = opts.renewDeadlineMs ?? 10_000;
    this.retryMs = opts.retryPeriodMs ?? 2_000;
    if (this.renewMs >= this.leaseMs) throw new Error('leader election: the renew deadline must be shorter than the lease duration');
  }

  isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    const loop = async () => {
      if (this.stopped) return;
      this.inflight = this.tick();
      await this.inflight;
      this.inflight = undefined;
      if (!this.stopped) this.timer = setTimeout(() => void loop(), this.leading ? this.retryMs : this.retryMs * (1 + Math.random() * 0.2));
    };
    void loop();
  }

  /**
   * Stops electing. Waits for an attempt in flight (bounded by the renew deadline), so a lease it
   * acquired after stop() began is seen here and released instead of being held until it expires.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inflight;
    clearTimeout(this.deadlineTimer);
    this.setLeading(false, 'stopping');
    if (!this.mayHold) return;
    try {
      const lease = await this.read(AbortSignal.timeout(this.renewMs));
      if (lease.spec.holderIdentity === this.opts.identity) {
        await this.replace({ ...lease, spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1 } }, AbortSignal.timeout(this.renewMs));
      }
    } catch (err) {
      this.opts.log.warn({ err: String(err) }, 'leader election: could not release the lease');
    }
  }

  /**
   * One acquire-or-renew attempt, bounded so that a hung request cannot outlive the renew deadline:
   * a leader gets the time left until its deadline, a follower the renew deadline itself. The deadline
   * timer (armed on each renewal) steps down on its own clock, whatever the request is doing.
   */
  private async tick(): Promise<void> {
    const started = Date.now();
    const budgetMs = this.leading ? Math.max(0, this.lastRenew + this.renewMs - started) : this.renewMs;
    const attempt = new AbortController();
    const bound = setTimeout(() => attempt.abort(), budgetMs);
    try {
      await this.tryAcquireOrRenew(started, attempt.signal);
    } catch (err) {
      const why = attempt.signal.aborted ? `no answer within ${budgetMs} ms` : String(err);
      this.opts.log.warn({ err: why, lease: this.opts.name }, 'leader election: lease update failed');
    } finally {
      clearTimeout(bound);
    }
    if (this.leading && Date.now() - this.lastRenew > this.renewMs) this.setLeading(false, 'renew deadline passed');
  }

  private async tryAcquireOrRenew(started: number, signal: AbortSignal): Promise<void> {
    const { namespace, name, identity } = this.opts;
    const now = microTime(new Date(started));
    let lease: Lease;
    try {
      lease = await this.read(signal);
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
      if (this.stopped) return; // stopping: do not take a lease only to give it back
      try {
        this.mayHold = true;
        await kubeRequest(this.opts.kc, collectionPath(Resources.lease, namespace), {
          method: 'POST',
          signal,
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds: Math.ceil(this.leaseMs / 1000), acquireTime: now, renewTime: now, leaseTransitions: 0 },
          },
        });
        this.renewed(started);
      } catch (e) {
        if (!isStatus(e, 409)) throw e; // someone else created it first
      }
      return;
    }
    const spec = lease.spec;
    const record = `${spec.holderIdentity ?? ''}|${spec.renewTime ?? ''}|${spec.leaseDurationSeconds ?? ''}`;
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const holder = spec.holderIdentity;
    const durationMs = (spec.leaseDurationSeconds ?? this.leaseMs / 1000) * 1000;
    const expired = !holder || Date.now() - this.observed.at > durationMs;
    if (holder !== identity && !expired) {
      if (this.leading) this.setLeading(false, `lease held by ${holder}`);
      return;
    }
    if (this.stopped) return; // stopping: stop() releases what we hold; take nothing new
    const next: Lease = {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: Math.ceil(this.leaseMs / 1000),
        renewTime: now,
        ...(holder !== identity ? { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
      },
    };
    try {
      // replace carries metadata.resourceVersion: a concurrent writer makes this a 409, not a split brain.
      this.mayHold = true;
      await this.replace(next, signal);
      this.renewed(started);
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
    }
  }

  private async read(signal: AbortSignal): Promise<Lease> {
    return leaseSchema.parse(await kubeRequest(this.opts.kc, objectPath(Resources.lease, this.opts.namespace, this.opts.name), { signal }));
  }

  private async replace(lease: Lease, signal: AbortSignal): Promise<void> {
    await kubeRequest(this.opts.kc, objectPath(Resources.lease, this.opts.namespace, this.opts.name), { method: 'PUT', body: lease, signal });
  }

  /**
   * A write sent at `sentAt` succeeded. The deadline counts from when it was sent, not answered: other
   * replicas may have seen the new renewTime as early as that, so stepping down at sentAt + renew
   * deadline is always before they can take over (sentAt + lease duration, by their own clocks).
   */
  private renewed(sentAt: number): void {
    // stop() began while this write was in flight: it will release the lease; never start leading now.
    if (this.stopped) return;
    this.lastRenew = sentAt;
    clearTimeout(this.deadlineTimer);
    const left = sentAt + this.renewMs - Date.now();
    if (left <= 0) return this.setLeading(false, 'renew deadline passed');
    this.deadlineTimer = setTimeout(() => this.setLeading(false, 'renew deadline passed'), left);
    if (!this.leading) this.setLeading(true, 'acquired the lease');
  }

  private setLeading(leading: boolean, why: string): void {
    if (this.leading === leading) return;
    this.leading = leading;
    this.opts.log.info({ lease: this.opts.name, identity: this.opts.identity, why }, leading ? 'became leader' : 'stopped leading');
    if (leading) this.opts.onStartedLeading?.();
    else this.opts.onStoppedLeading?.();
  }
}
