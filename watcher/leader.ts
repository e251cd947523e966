import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { isStatus, kubeRequest } from '../kube/raw.js';
import { objectPath, collectionPath, Resources } from '../kube/resources.js';
import type { Logger } from '../runtime/log.js';

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
  private lastRenew = 0;
  private timer?: NodeJS.Timeout;
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
    const tick = async () => {
      if (this.stopped) return;
      try {
        await this.tryAcquireOrRenew();
      } catch (err) {
        this.opts.log.warn({ err: String(err), lease: this.opts.name }, 'leader election: lease update failed');
      }
      if (this.leading && Date.now() - this.lastRenew > this.renewMs) this.setLeading(false, 'renew deadline passed');
      if (!this.stopped) this.timer = setTimeout(() => void tick(), this.leading ? this.retryMs : this.retryMs * (1 + Math.random() * 0.2));
    };
    void tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (!this.leading) return;
    this.setLeading(false, 'stopping');
    try {
      const lease = await this.read();
      if (lease.spec.holderIdentity === this.opts.identity) {
        await this.replace({ ...lease, spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1 } });
      }
    } catch (err) {
      this.opts.log.warn({ err: String(err) }, 'leader election: could not release the lease');
    }
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const { namespace, name, identity } = this.opts;
    const now = microTime(new Date());
    let lease: Lease;
    try {
      lease = await this.read();
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
      try {
        await kubeRequest(this.opts.kc, collectionPath(Resources.lease, namespace), {
          method: 'POST',
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds: Math.ceil(this.leaseMs / 1000), acquireTime: now, renewTime: now, leaseTransitions: 0 },
          },
        });
        this.renewed();
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
      await this.replace(next);
      this.renewed();
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
    }
  }

  private async read(): Promise<Lease> {
    return leaseSchema.parse(await kubeRequest(this.opts.kc, objectPath(Resources.lease, this.opts.namespace, this.opts.name)));
  }

  private async replace(lease: Lease): Promise<void> {
    await kubeRequest(this.opts.kc, objectPath(Resources.lease, this.opts.namespace, this.opts.name), { method: 'PUT', body: lease });
  }

  private renewed(): void {
    this.lastRenew = Date.now();
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
