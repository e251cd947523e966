import { patchPodMetadata, readPod, retryOnConflict } from '../pod-access/pod-api.js';
import { podStateOf, type LifecyclePod, type PodRef } from '../pod-access/pod.js';
import { expectationKey, lifecycleFinalizerFor, planCooperation, type Cooperator } from '../protocol/index.js';
import type { LifecycleClientDeps } from './deps.js';

/**
 * A cooperator named the way ResourceConsist names it, so Ripple and ResourceConsist controllers can share
 * Pods: key `<Kind>/<ns>/<name>` of the employer (usually a Service), finalizer `prot…/<md5(name)[8:24]>`.
 */
export function cooperatorFor(employer: { kind: string; namespace: string; name: string }): Cooperator {
  return { key: expectationKey(employer), finalizer: lifecycleFinalizerFor(employer.name) };
}

export interface SyncCooperationOptions {
  /** Does this cooperator cover the Pod (its Service exists and selects it)? Default true. */
  selected?: boolean;
  /**
   * Serve the Pod (register it in the load balancer, …). Called after the protection finalizer is on the Pod,
   * so a Pod being served always holds the finalizer: a lifecycle that starts now waits in preparing until this
   * cooperator stops serving it. Must be idempotent: it runs on every sync and on retries. If it fails, the
   * finalizer stays; the next sync calls it again (or, once the Pod is not ready, removes the finalizer).
   */
  onLifecycleReady?: (pod: LifecyclePod) => Promise<void>;
  /** Stop serving the Pod. Called before the finalizer is removed: removing it is what lets the operation go on. */
  onLifecycleNotReady?: (pod: LifecyclePod) => Promise<void>;
}

export type CooperationOutcome =
  | { gone: true }
  | { gone: false; lifecycleReady: boolean; updated: boolean; pod: LifecyclePod };

/**
 * The cooperation-controller side, one level-triggered step for one Pod: while the cooperator covers the Pod its
 * expected finalizer is recorded in `pod.kusionstack.io/available-conditions`; when the Pod is lifecycle-ready
 * (Ready, service-ready not False, not deleting) the cooperator serves it and holds it with its protection
 * finalizer; otherwise it stops serving it and lets go. Call it from the cooperator's reconcile on every Pod event.
 */
export async function syncCooperation(
  deps: LifecycleClientDeps,
  ref: PodRef,
  cooperator: Cooperator,
  opts: SyncCooperationOptions = {},
): Promise<CooperationOutcome> {
  return retryOnConflict(
    `cooperation ${cooperator.key} on ${ref.namespace}/${ref.name}`,
    async (): Promise<CooperationOutcome> => {
      const pod = await readPod(deps.kc, ref);
      if (pod === undefined) return { gone: true };
      const plan = planCooperation({ pod: podStateOf(pod), cooperator, selected: opts.selected ?? true });
      // Not ready: stop serving first; removing the finalizer afterwards is what lets the operation go on.
      if (!plan.lifecycleReady) await opts.onLifecycleNotReady?.(pod);
      let written = pod;
      if (plan.changed) {
        let finalizers: string[] | undefined;
        const current = pod.metadata.finalizers ?? [];
        if (plan.addFinalizer !== undefined) finalizers = [...current, plan.addFinalizer];
        if (plan.removeFinalizer !== undefined) finalizers = current.filter((f) => f !== plan.removeFinalizer);
        // Preconditioned on the version planned from: if a lifecycle began in between, this is a 409 and the
        // retry plans from the newer Pod (no longer lifecycle-ready, so it is not served at all).
        written = await patchPodMetadata(deps.kc, pod, { annotations: plan.annotations, finalizers });
      }
      // Ready: serve only once the finalizer is on the API server. Serving first leaves a window in which a
      // lifecycle can start and be granted operate (no finalizer holds it) while the load balancer still routes.
      if (plan.lifecycleReady) await opts.onLifecycleReady?.(written);
      return { gone: false, lifecycleReady: plan.lifecycleReady, updated: plan.changed, pod: written };
    },
    deps.maxAttempts,
  );
}
