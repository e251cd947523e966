import type { KubeConfig } from '@kubernetes/client-node';
import type { PodRef } from '../pod-access/pod.js';
import { nanosFromDate, type UnixNanos } from '../protocol/index.js';

/**
 * What the client needs from its caller. Inside a Ripple handler that is `{ kc: ctx.kc, now: ctx.now }`; the
 * clock is passed in so a handler's tests and logs agree with the timestamps it writes.
 */
export interface LifecycleClientDeps {
  kc: KubeConfig;
  now?: () => Date;
  /** Read-modify-write attempts before a conflict is given up as a transient error (default 5). */
  maxAttempts?: number;
}

export function nowNanos(deps: LifecycleClientDeps): UnixNanos {
  return nanosFromDate(deps.now ? deps.now() : new Date());
}

/** The Pod asked for does not exist (any more), or is another instance than the uid given. */
export class PodGoneError extends Error {
  override readonly name = 'PodGoneError';
  constructor(readonly ref: PodRef) {
    super(`pod ${ref.namespace}/${ref.name}${ref.uid ? ` (uid ${ref.uid})` : ''} not found`);
  }
}
