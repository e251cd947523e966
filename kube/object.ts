import { z } from 'zod';

/**
 * The part of any Kubernetes object Ripple's generic layers rely on. Watch payloads and list items
 * are parsed with this at the boundary; everything else on the object is kept as it came.
 */
export const ownerReferenceSchema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});
export type OwnerReference = z.infer<typeof ownerReferenceSchema>;

export const objectMetaSchema = z
  .object({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    generation: z.number().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    ownerReferences: z.array(ownerReferenceSchema).optional(),
    finalizers: z.array(z.string()).optional(),
    deletionTimestamp: z.string().optional(),
    creationTimestamp: z.string().optional(),
  })
  .passthrough();

export const kubeObjectSchema = z
  .object({
    apiVersion: z.string().optional(),
    kind: z.string().optional(),
    metadata: objectMetaSchema,
  })
  .passthrough();
export type KubeObject = z.infer<typeof kubeObjectSchema>;

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const optString = (v: unknown) => v === undefined || typeof v === 'string';
const isStringMap = (v: unknown) => isRec(v) && Object.values(v).every((x) => typeof x === 'string');
const optBool = (v: unknown) => v === undefined || typeof v === 'boolean';
const isOwnerReference = (r: unknown) =>
  isRec(r) && typeof r.apiVersion === 'string' && typeof r.kind === 'string' && typeof r.name === 'string' && typeof r.uid === 'string' && optBool(r.controller) && optBool(r.blockOwnerDeletion);

/**
 * Whether `raw` holds to kubeObjectSchema's rules, checked in place. Watch streams and lists hand over every
 * object of a resource, and the schema's parse (a copy of each object's top level and metadata, labels and
 * annotations walked key by key) was the largest library cost of a ModelServing converge (bench/README.md,
 * "Round 4"). An object that passes is used as it came; one that does not is parsed by the schema, for its
 * error (parseKubeObject). kube/object.test.ts holds the two to the same verdicts.
 */
export function isKubeObject(raw: unknown): raw is KubeObject {
  if (!isRec(raw) || !optString(raw.apiVersion) || !optString(raw.kind)) return false;
  const m = raw.metadata;
  if (!isRec(m) || typeof m.name !== 'string') return false;
  for (const k of ['namespace', 'uid', 'resourceVersion', 'deletionTimestamp', 'creationTimestamp'] as const) if (!optString(m[k])) return false;
  if (m.generation !== undefined && !(typeof m.generation === 'number' && Number.isFinite(m.generation))) return false;
  if (m.labels !== undefined && !isStringMap(m.labels)) return false;
  if (m.annotations !== undefined && !isStringMap(m.annotations)) return false;
  if (m.ownerReferences !== undefined && !(Array.isArray(m.ownerReferences) && m.ownerReferences.every(isOwnerReference))) return false;
  if (m.finalizers !== undefined && !(Array.isArray(m.finalizers) && m.finalizers.every((f) => typeof f === 'string'))) return false;
  return true;
}

/** kubeObjectSchema.safeParse, without the copy when the object holds to it (isKubeObject). */
export function parseKubeObject(raw: unknown): { success: true; data: KubeObject } | { success: false; error: z.ZodError } {
  if (isKubeObject(raw)) return { success: true, data: raw };
  const parsed = kubeObjectSchema.safeParse(raw);
  return parsed.success ? { success: true, data: parsed.data } : { success: false, error: parsed.error };
}

export const listSchema = z.object({
  metadata: z.object({ resourceVersion: z.string().optional(), continue: z.string().optional() }).passthrough(),
  // A metadata-only list (PartialObjectMetadataList) with nothing in it says `items: null`. Each item is held to
  // kubeObjectSchema (parseKubeObject), its issues reported under its index.
  items: z
    .array(z.unknown())
    .nullable()
    .transform((items, ctx) => {
      const out: KubeObject[] = [];
      for (const [i, item] of (items ?? []).entries()) {
        const parsed = parseKubeObject(item);
        if (parsed.success) out.push(parsed.data);
        else for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: [i, ...issue.path] });
      }
      return out;
    }),
});

/** A Kubernetes Status object, as returned on errors and inside watch ERROR events. */
export const statusSchema = z
  .object({
    kind: z.literal('Status').optional(),
    code: z.number().optional(),
    reason: z.string().optional(),
    message: z.string().optional(),
  })
  .passthrough();
