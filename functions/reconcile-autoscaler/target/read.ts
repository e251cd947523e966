/**
 * Reading a scale target: a Deployment as WVA reads it, any other supported kind as its object plus its
 * scale subresource. Not found (404, or the kind's API not served: a LeaderWorkerSet without its CRD)
 * is undefined.
 */
import { AppsV1Api } from '@kubernetes/client-node';
import { z } from 'zod';
import type { VariantAutoscaling } from '../../../api/variantautoscaling.js';
import { isStatus, kubeRequest } from '../../../kube/raw.js';
import { objectPath } from '../../../kube/resources.js';
import type { HandlerContext } from '../../../runtime/function.js';
import { whileClaimed } from '../../../base/reconcile-scope.js';
import { deploymentFacts, scaleTargetFacts, type DeploymentFacts, type TargetObject } from './deployment-facts.js';
import { targetKindOf, type TargetKind } from './kinds.js';

const objectSchema = z.object({
  metadata: z.object({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    deletionTimestamp: z.string().optional(),
    creationTimestamp: z.string().optional(),
  }),
  status: z.object({ readyReplicas: z.number().optional(), availableReplicas: z.number().optional() }).passthrough().optional(),
}).passthrough();

const scaleSchema = z.object({
  spec: z.object({ replicas: z.number().optional() }).optional(),
  status: z.object({ replicas: z.number().optional(), selector: z.string().optional() }).optional(),
});

function at(o: unknown, path: readonly string[]): unknown {
  let cur = o;
  for (const p of path) cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[p] : undefined;
  return cur;
}

async function orUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

/** A non-Deployment target through its object and `/scale`. */
export async function readScaledTarget(ctx: Pick<HandlerContext, 'kc'>, kind: TargetKind, namespace: string, name: string): Promise<DeploymentFacts | undefined> {
  const path = objectPath(kind.resource, namespace, name);
  const raw = await orUndefined(() => kubeRequest(ctx.kc, path));
  if (raw === undefined) return undefined;
  const scale = await orUndefined(() => kubeRequest(ctx.kc, `${path}/scale`));
  if (scale === undefined) return undefined;
  const o = objectSchema.parse(raw);
  const podSpec = kind.podSpecPath.length > 0 ? at(raw, kind.podSpecPath) : undefined;
  const target: TargetObject = {
    metadata: o.metadata,
    ...(o.status ? { status: { ...(o.status.readyReplicas !== undefined ? { readyReplicas: o.status.readyReplicas } : {}), ...(o.status.availableReplicas !== undefined ? { availableReplicas: o.status.availableReplicas } : {}) } } : {}),
    ...(podSpec !== undefined && podSpec !== null && typeof podSpec === 'object' ? { podSpec: podSpec as TargetObject['podSpec'] } : {}),
  };
  return scaleTargetFacts(kind.kind, target, scaleSchema.parse(scale));
}

/** The target `scaleTargetRef` names in `namespace`; undefined when it does not exist or its kind is not supported. */
export async function readTarget(ctx: Pick<HandlerContext, 'kc'>, namespace: string, ref: VariantAutoscaling['spec']['scaleTargetRef']): Promise<DeploymentFacts | undefined> {
  const kind = targetKindOf(ref);
  if (kind === undefined) return undefined;
  if (kind.kind === 'Deployment') return orUndefined(async () => deploymentFacts(await whileClaimed(`get Deployment ${namespace}/${ref.name}`, () => ctx.kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace, name: ref.name }))));
  return readScaledTarget(ctx, kind, namespace, ref.name);
}
