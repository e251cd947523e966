import type { KubeConfig } from '@kubernetes/client-node';
import { readDecision } from '../functions/reconcile-autoscaler/state.js';
import { CONTROL_LABEL, CONTROL_LABEL_VALUE, liveLifecycles, parseLifecycleView, PROTECTION_FINALIZER_PREFIX } from '../functions/ops-lifecycle/protocol/index.js';
import { kubeRequest } from '../kube/raw.js';
import type { ObjectSources } from '../ops/object-view.js';
import type { RedisClient } from '../queue/connection.js';

/**
 * The object view's readers (ops/object-view.ts), wired here as the role reader is: the autoscaler's
 * stored decision and ops-lifecycle's own reading of a Pod's labels, so the page shows what the
 * functions themselves would conclude, from the same state.
 */
export function objectSources(opts: { kc: KubeConfig; redis: RedisClient; prefix: string; namespace?: string }): ObjectSources {
  return {
    // Bounded as a scrape's list is: a page that does not come within 5 s fails, the next poll tries again.
    get: (p, query) => kubeRequest(opts.kc, p, { query, timeoutMs: 5_000 }),
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
    podSelector: `${CONTROL_LABEL}=${CONTROL_LABEL_VALUE}`,
    async decision(namespace, name) {
      const d = await readDecision(opts.redis, opts.prefix, `${namespace}/${name}`);
      return d && { desiredReplicas: d.desiredReplicas, currentReplicas: d.currentReplicas, action: d.action, source: d.source, reason: d.reason, decidedAt: d.decidedAt };
    },
    podOperation({ labels, finalizers }) {
      const view = parseLifecycleView(labels);
      const live = liveLifecycles(view);
      const held = finalizers.filter((f) => f.startsWith(PROTECTION_FINALIZER_PREFIX));
      if (live.length === 0 && held.length === 0) return undefined;
      return {
        phase: view.phase,
        operations: live.map((e) => ({ id: e.id, ...(e.type ? { type: e.type } : {}), stage: e.stage, operating: e.operating })),
        finalizers: held,
      };
    },
  };
}
