import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { Resources } from '../kube/resources.js';
import { ListWatch } from '../watcher/list-watch.js';
import { keepFields } from '../watcher/projection.js';
import type { Logger } from '../base/log.js';

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
  /** After refused calls, how the jobs stay held when no EndpointSlice change comes meanwhile (RefusalHold). */
  refusalHold?: RefusalHold;
}

/**
 * How long the jobs stay held after a call was refused while the Service's slices say a pod is ready. Either
 * kube-proxy has not yet written the new endpoint's rules (the Service's ClusterIP still refuses: tens to hundreds of
 * milliseconds after the slice says ready, up to its 1 s min-sync-period and more on a loaded node), or the slices
 * still list a pod that has just gone. The first hold is short, so the first pod's work starts as soon as its rules
 * are in; each refusal after a hold doubles it up to maxMs, so a pod that is gone costs a few refused calls, not a
 * loop. A refused 2 s flat added 2 s to a start from zero in the serverless bench (the ClusterIP refused 16 ms
 * after the slice said ready).
 */
export interface RefusalHold {
  firstMs: number;
  maxMs: number;
}
const REFUSAL_HOLD: RefusalHold = { firstMs: 100, maxMs: 2_000 };

/**
 * The hold's decision, apart from the watch that feeds it: held until the slices say a pod is ready, and again after
 * a refused call (RefusalHold; or until the slices change).
 */
export class ReadinessGate {
  private ready = false;
  private refusedUntil = 0;
  /** Refusals since the slices last changed, each counted once per hold. */
  private refusals = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly target: Holdable,
    private readonly refusalHold: RefusalHold = REFUSAL_HOLD,
    private readonly onChange?: (ready: boolean) => void,
  ) {
    target.hold();
  }

  /** What the Service's slices say now. A change of slices ends a refusal's hold and starts its doubling over. */
  slices(ready: boolean): void {
    this.refusedUntil = 0;
    this.refusals = 0;
    this.apply(ready);
  }

  /** A call to the Service was refused (nothing listens behind it now). */
  refused(): void {
    if (this.stopped) return;
    const now = Date.now();
    // The calls that were running together are refused together: they are one refusal, not one each.
    if (now >= this.refusedUntil) this.refusals++;
    const { firstMs, maxMs } = this.refusalHold;
    const holdMs = Math.min(maxMs, firstMs * 2 ** Math.min(this.refusals - 1, 30));
    this.refusedUntil = Math.max(this.refusedUntil, now + holdMs);
    this.apply(this.ready);
  }

  isReady(): boolean {
    return this.ready;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private apply(ready: boolean): void {
    if (this.stopped) return;
    const changed = ready !== this.ready;
    this.ready = ready;
    clearTimeout(this.timer);
    this.timer = undefined;
    const left = this.refusedUntil - Date.now();
    if (ready && left <= 0) this.target.resume();
    else {
      this.target.hold();
      // Ready but refused a moment ago: look again when the refusal's hold is over. A timer can fire before
      // Date.now() reaches the end (libuv counts from the loop's cached time, which trails the wall clock), so what
      // is left is re-armed each time; without that the jobs stayed held until the next slice change, 180 s in a bench.
      if (ready) {
        this.timer = setTimeout(() => this.apply(this.ready), Math.max(1, left));
        this.timer.unref();
      }
    }
    if (changed) this.onChange?.(ready);
  }
}

/**
 * Watches one Service's EndpointSlices (label kubernetes.io/service-name) and holds the target while none routes to
 * a ready endpoint: from the start until the first list says one does, and whenever the last one goes. A refused
 * call (refused()) holds it too, until the slices change or the refusal's hold has passed (RefusalHold), so a pod
 * that went away before its endpoint did costs a few refused calls, not a retry loop.
 */
export class HoldWhileUnready {
  private readonly watch: ListWatch;
  private readonly gate: ReadinessGate;

  constructor(private readonly opts: HoldWhileUnreadyOptions) {
    const service = `${opts.service.namespace}/${opts.service.name}`;
    const log = opts.log.child({ service });
    this.gate = new ReadinessGate(opts.target, opts.refusalHold, (ready) =>
      log.info({ ready }, ready ? 'the function has a ready endpoint: dispatching' : 'the function has no ready endpoint: holding its jobs in the queue'),
    );
    this.watch = new ListWatch({
      kc: opts.kc,
      resource: Resources.endpointSlice,
      namespace: opts.service.namespace,
      labelSelector: `kubernetes.io/service-name=${opts.service.name}`,
      log,
      // Only what readiness reads.
      projection: keepFields('endpoints'),
      onEvent: async () => this.gate.slices(hasReadyEndpoint(this.watch.store.list(opts.service.namespace))),
    });
  }

  /** A call to the Service was refused: hold until its slices change, or a while. */
  refused(): void {
    this.gate.refused();
  }

  /** Whether the Service has a ready endpoint, as last seen. */
  isReady(): boolean {
    return this.gate.isReady();
  }

  async stop(): Promise<void> {
    this.gate.stop();
    await this.watch.stop();
  }
}
