/**
 * The cycle's read of annotated HPAs and KEDA ScaledObjects (discovery/annotations.ts): listed in the
 * namespace Ripple is confined to, or cluster-wide, as upstream lists them (RBAC cannot select by
 * annotation). ScaledObjects are skipped quietly while KEDA's CRD is not installed.
 */
import { z } from 'zod';
import { listSchema } from '../../../kube/object.js';
import { isStatus, kubeRequest } from '../../../kube/raw.js';
import { collectionPath, Resources, type ResourceRef } from '../../../kube/resources.js';
import type { HandlerContext } from '../../../runtime/function.js';
import { parseAnnotatedScaler, type AnnotatedVariant, type ScalerKind } from './annotations.js';

async function listAll(ctx: HandlerContext, resource: ResourceRef, namespace: string | undefined): Promise<unknown[]> {
  const items: unknown[] = [];
  let cont: string | undefined;
  do {
    const page = listSchema.parse(await kubeRequest(ctx.kc, collectionPath(resource, namespace), { query: { limit: 500, continue: cont } }));
    items.push(...page.items);
    cont = page.metadata.continue || undefined;
  } while (cont);
  return items;
}

export async function listAnnotatedVariants(ctx: HandlerContext, namespace: string | undefined): Promise<AnnotatedVariant[]> {
  const out: AnnotatedVariant[] = [];
  const kinds: Array<[ScalerKind, ResourceRef]> = [
    ['HorizontalPodAutoscaler', Resources.horizontalPodAutoscaler],
    ['ScaledObject', Resources.scaledObject],
  ];
  for (const [kind, resource] of kinds) {
    let items: unknown[];
    try {
      items = await listAll(ctx, resource, namespace);
    } catch (err) {
      // KEDA not installed: no ScaledObjects to find (not an error, as upstream).
      if (kind === 'ScaledObject' && isStatus(err, 404)) continue;
      throw err;
    }
    for (const item of items) {
      const r = parseAnnotatedScaler(kind, item);
      if (r.ok) out.push(r.variant);
      else if ('error' in r) ctx.log.warn({ kind, object: describe(item), problem: r.error }, `skipping an ${kind} annotated llm-d.ai/managed: its annotations are unusable`);
    }
  }
  return out;
}

const named = z.object({ metadata: z.object({ name: z.string().optional(), namespace: z.string().optional() }) });
function describe(item: unknown): string {
  const m = named.safeParse(item);
  return m.success ? `${m.data.metadata.namespace ?? ''}/${m.data.metadata.name ?? ''}` : '?';
}
