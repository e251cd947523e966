// A definition module: what `ripple <mode> --functions-module dist/index.js` (or RIPPLE_FUNCTIONS_MODULES)
// loads beside Ripple's own functions. It imports only Ripple's public API, the package `ripple`.
import { Resources, isStatus, kubeRequest, mapToSelf, objectPath, onlyEvents } from 'ripple';
import type { FunctionDefinition, HandlerContext, KubeObject, ReconcileRequest } from 'ripple';
import { STAMP_LABEL, planStamp } from './plan.js';

const selector = `${STAMP_LABEL}=true`;

/** Reads the ConfigMap fresh, writes the stamp when its data changed, and says so with an Event. */
async function reconcile(req: ReconcileRequest, ctx: HandlerContext): Promise<void> {
  const path = objectPath(Resources.configMap, req.namespace, req.name);
  let cm: KubeObject & { data?: Record<string, string> };
  try {
    cm = (await kubeRequest(ctx.kc, path)) as typeof cm;
  } catch (err) {
    if (isStatus(err, 404)) return; // deleted: nothing of ours to clean up (the annotation went with it)
    throw err;
  }
  if (cm.metadata.labels?.[STAMP_LABEL] !== 'true') return;
  const plan = planStamp(cm);
  if (!plan) return;
  await kubeRequest(ctx.kc, path, { method: 'PATCH', contentType: 'application/merge-patch+json', body: plan.patch });
  ctx.log.info({ stamp: plan.stamp }, 'stamped');
  await ctx.events.emit({
    involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', namespace: req.namespace, name: req.name, uid: cm.metadata.uid },
    type: 'Normal',
    reason: 'Stamped',
    message: `data stamped ${plan.stamp}`,
    source: 'configmap-stamp',
  });
}

export function definitions(env: NodeJS.ProcessEnv = process.env): FunctionDefinition[] {
  return [
    {
      name: 'configmap-stamp',
      primary: Resources.configMap,
      primaryLabelSelector: selector,
      // Watched with the label selector: the API server sends only the labelled ConfigMaps. A delete leaves
      // nothing to do. Our own annotation write comes back as an update; the plan then finds nothing to do.
      triggers: [{ resource: Resources.configMap, labelSelector: selector, predicate: onlyEvents('create', 'update'), map: mapToSelf }],
      reconcile,
      concurrency: Number(env.CONFIGMAP_STAMP_CONCURRENCY ?? '2'),
    },
  ];
}
