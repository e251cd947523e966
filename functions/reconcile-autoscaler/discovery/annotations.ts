/**
 * Discovery without the CRD, as current WVA does it (llm-d-autoscaling internal/annotations and
 * internal/utils/variant_fromannotations.go): an HPA or a KEDA ScaledObject annotated
 * `llm-d.ai/managed: "true"` and `llm-d.ai/model-id` is a variant, named after the HPA or ScaledObject,
 * scaling the HPA's or ScaledObject's `scaleTargetRef`. Pure: the cycle lists the objects and hands
 * them here; what comes back is a VariantAutoscaling as the rest of the cycle knows it, never written
 * to the API server.
 *
 * Precedence (seed 003's VariantAutoscaling stays the spec): a VariantAutoscaling wins over an
 * annotated scaler that names the same target; between annotated ones, a ScaledObject wins over an
 * HPA (KEDA's own HPA for a ScaledObject inherits the ScaledObject's annotations), as upstream does.
 */
import { z } from 'zod';
import { DEFAULT_VARIANT_COST_TEXT, type VariantAutoscaling } from '../../../api/variantautoscaling.js';

export const MANAGED_ANNOTATION = 'llm-d.ai/managed';
export const MODEL_ID_ANNOTATION = 'llm-d.ai/model-id';
export const VARIANT_COST_ANNOTATION = 'llm-d.ai/variant-cost';

export type ScalerKind = 'HorizontalPodAutoscaler' | 'ScaledObject';

/** `llm-d.ai/managed` is exactly "true" (upstream's IsManaged). */
export function isManaged(metadata: { annotations?: Record<string, string> | undefined }): boolean {
  return metadata.annotations?.[MANAGED_ANNOTATION] === 'true';
}

const scalerSchema = z.object({
  metadata: z.object({
    name: z.string().min(1),
    namespace: z.string().min(1),
    uid: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    deletionTimestamp: z.string().optional(),
    creationTimestamp: z.string().optional(),
  }),
  spec: z.object({
    scaleTargetRef: z.object({ apiVersion: z.string().optional(), kind: z.string().optional(), name: z.string().min(1) }),
  }),
});

/** A variant found on an annotated scaler: the synthetic VA, and the object it came from (for Events). */
export interface AnnotatedVariant {
  va: VariantAutoscaling;
  source: { kind: ScalerKind; apiVersion: string; name: string; namespace: string; uid?: string };
}

export type ScalerParse = { ok: true; variant: AnnotatedVariant } | { ok: false; skipped: 'not-managed' | 'deleting' } | { ok: false; error: string };

const API_VERSION: Record<ScalerKind, string> = { HorizontalPodAutoscaler: 'autoscaling/v2', ScaledObject: 'keda.sh/v1alpha1' };

/**
 * One HPA or ScaledObject → a variant, or why not. Upstream's rules: managed must be "true"; model-id
 * required and not empty; variant-cost optional (default "10.0"), a non-negative number. A ScaledObject's
 * `scaleTargetRef` defaults to an `apps/v1` Deployment, as KEDA's does.
 */
export function parseAnnotatedScaler(kind: ScalerKind, object: unknown): ScalerParse {
  const r = scalerSchema.safeParse(object);
  if (!r.success) return { ok: false, error: r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  const { metadata, spec } = r.data;
  if (!isManaged(metadata)) return { ok: false, skipped: 'not-managed' };
  if (metadata.deletionTimestamp !== undefined) return { ok: false, skipped: 'deleting' };
  const modelID = metadata.annotations?.[MODEL_ID_ANNOTATION] ?? '';
  if (modelID === '') return { ok: false, error: `required annotation ${MODEL_ID_ANNOTATION} is missing or empty` };
  const costText = metadata.annotations?.[VARIANT_COST_ANNOTATION] || DEFAULT_VARIANT_COST_TEXT;
  const cost = Number(costText);
  if (!/^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(costText) || !Number.isFinite(cost)) {
    return { ok: false, error: `annotation ${VARIANT_COST_ANNOTATION} must be a numeric string, got ${JSON.stringify(costText)}` };
  }
  if (cost < 0) return { ok: false, error: `annotation ${VARIANT_COST_ANNOTATION} must be non-negative, got ${costText}` };
  const ref = spec.scaleTargetRef;
  const va: VariantAutoscaling = {
    apiVersion: 'llmd.ai/v1alpha1',
    kind: 'VariantAutoscaling',
    metadata: {
      name: metadata.name,
      namespace: metadata.namespace,
      ...(metadata.uid !== undefined ? { uid: metadata.uid } : {}),
      ...(metadata.labels !== undefined ? { labels: metadata.labels } : {}),
      ...(metadata.creationTimestamp !== undefined ? { creationTimestamp: metadata.creationTimestamp } : {}),
    },
    spec: {
      scaleTargetRef: { apiVersion: ref.apiVersion ?? 'apps/v1', kind: ref.kind ?? 'Deployment', name: ref.name },
      modelID,
      // The CRD's pattern (a decimal string): a number written as 1e1 is given in plain decimals.
      variantCost: /^\d+(\.\d+)?$/.test(costText.trim()) ? costText.trim() : String(cost),
    },
  };
  return { ok: true, variant: { va, source: { kind, apiVersion: API_VERSION[kind], name: metadata.name, namespace: metadata.namespace, ...(metadata.uid !== undefined ? { uid: metadata.uid } : {}) } } };
}

function targetKey(va: Pick<VariantAutoscaling, 'metadata' | 'spec'>): string {
  return `${va.metadata.namespace ?? ''}/${va.spec.scaleTargetRef.kind}/${va.spec.scaleTargetRef.name}`;
}

/**
 * The annotated variants that take part beside the VariantAutoscalings: one per target, a ScaledObject
 * before an HPA, and none for a target a VariantAutoscaling already names (it wins, and is left alone).
 * `shadowed` lists the annotated ones left out and why, for the logs.
 */
export function mergeAnnotatedVariants(
  vas: ReadonlyArray<Pick<VariantAutoscaling, 'metadata' | 'spec'>>,
  annotated: readonly AnnotatedVariant[],
): { variants: AnnotatedVariant[]; shadowed: Array<{ variant: AnnotatedVariant; by: string }> } {
  const byVa = new Map(vas.map((va) => [targetKey(va), `VariantAutoscaling ${va.metadata.name ?? ''}`]));
  const rank = (v: AnnotatedVariant) => (v.source.kind === 'ScaledObject' ? 0 : 1);
  const sorted = [...annotated].sort((a, b) => rank(a) - rank(b) || (a.source.name < b.source.name ? -1 : a.source.name > b.source.name ? 1 : 0));
  const taken = new Map<string, string>();
  const variants: AnnotatedVariant[] = [];
  const shadowed: Array<{ variant: AnnotatedVariant; by: string }> = [];
  for (const v of sorted) {
    const key = targetKey(v.va);
    const by = byVa.get(key) ?? taken.get(key);
    if (by !== undefined) {
      shadowed.push({ variant: v, by });
      continue;
    }
    taken.set(key, `${v.source.kind} ${v.source.name}`);
    variants.push(v);
  }
  return { variants, shadowed };
}
