import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import type { KubeObject } from '../kube/object.js';
import { Resources } from '../kube/resources.js';
import { ListWatch } from '../watcher/list-watch.js';
import { keepFields } from '../watcher/projection.js';
import type { Logger } from './log.js';

/**
 * Holding a function's jobs in its queue while its Service has no ready endpoint (serverless on plain Kubernetes:
 * function Deployments that KEDA scales to zero). Knative's activator holds a request for a revision at zero
 * itself; a plain Service refuses the connection, and the dispatcher would spend a retry and grow the key's backoff
 * on every job while the first pod starts. Held, the jobs wait in the queue (where KEDA sees them and scales the
 * function up), and the first ready endpoint releases them at once.
 */

export interface ServiceRef {
  namespace: string;
  name: string;
}

/**
 * The Service a dispatch URL reaches by its cluster DNS name (`<service>.<namespace>.svc[.<cluster domain>]`), or
 * undefined for any other host (a gateway, an IP, a short name whose namespace it does not say).
 */
export function serviceOfUrl(url: string): ServiceRef | undefined {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.[a-z0-9.-]+)?\.?$/.exec(host);
  return m ? { name: m[1]!, namespace: m[3]! } : undefined;
}

const sliceSchema = z
  .object({
    endpoints: z
      .array(z.object({ addresses: z.array(z.string()).nullish(), conditions: z.object({ ready: z.boolean().nullish() }).passthrough().nullish() }).passthrough())
      .nullish(),
  })
  .passthrough();

/**
 * Whether any of a Service's EndpointSlices routes to a ready endpoint. `ready` unset counts as ready (the API's
 * rule: consumers treat an unknown state as ready); a terminating endpoint is `ready: false`. A slice that does
 * not parse routes nowhere.
 */
export function hasReadyEndpoint(slices: readonly unknown[]): boolean {
  return slices.some((raw) => {
    const s = sliceSchema.safeParse(raw);
    return s.success && (s.data.endpoints ?? []).some((e) => (e.addresses ?? []).length > 0 && e.conditions?.ready !== false);
  });
}

/** What HoldWhileUnready holds and releases: a KeyedWorker. */
export interface Holdable {
  hold(): void;
  resume(): void;
}

export interface HoldWhileUnreadyOptions {
  kc: KubeConfig;
  service: ServiceRef;
  target: Holdable;
  log: Logger;
  /**
   * After a refused call, how long the jobs stay held when no EndpointSlice change comes meanwhile (the Service's
   * slices may still list a pod that has just gone). Default 2 s.
   */
  refusedHoldMs?: number;
}

/**
 * Watches one Service's EndpointSlices (label kubernetes.io/service-name) and holds the target while none routes to
 * a ready endpoint: from the start until the first list says one does, and whenever the last one goes. A refused
 * call (refused()) holds it too, until the slices change or refusedHoldMs has passed, so a pod that went away
 * before its endpoint did costs one refused call per running job, not a retry loop.
 */
export class HoldWhileUnready {
  private readonly watch: ListWatch;
  private ready = false;
  private refusedUntil = 0;
  private recheck: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly opts: HoldWhileUnreadyOptions) {
    opts.target.hold();
    const log = opts.log.child({ service: `${opts.service.namespace}/${opts.service.name}` });
    this.watch = new ListWatch({
      kc: opts.kc,
      resource: Resources.endpointSlice,
      namespace: opts.service.namespace,
      labelSelector: `kubernetes.io/service-name=${opts.service.name}`,
      log,
      // Only what readiness reads.
      projection: keepFields('endpoints'),
      onEvent: async () => {
        this.refusedUntil = 0;
        this.apply(hasReadyEndpoint(this.slices()));
      },
    });
  }

  /** A call to the Service was refused (nothing listens behind it now): hold until its slices change, or a while. */
  refused(): void {
    if (this.stopped) return;
    const ms = this.opts.refusedHoldMs ?? 2_000;
    this.refusedUntil = Date.now() + ms;
    this.opts.target.hold();
    clearTimeout(this.recheck);
    this.recheck = setTimeout(() => this.apply(this.ready), ms);
    this.recheck.unref();
  }

  /** Whether the Service has a ready endpoint, as last seen. */
  isReady(): boolean {
    return this.ready;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.recheck);
    await this.watch.stop();
  }

  private slices(): KubeObject[] {
    return this.watch.store.list(this.opts.service.namespace);
  }

  private apply(ready: boolean): void {
    if (this.stopped) return;
    const changed = ready !== this.ready;
    this.ready = ready;
    if (ready && Date.now() >= this.refusedUntil) this.opts.target.resume();
    else this.opts.target.hold();
    if (changed) this.opts.log.info({ service: `${this.opts.service.namespace}/${this.opts.service.name}`, ready }, ready ? 'the function has a ready endpoint: dispatching' : 'the function has no ready endpoint: holding its jobs in the queue');
  }
}
