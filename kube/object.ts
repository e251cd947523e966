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

export const listSchema = z.object({
  metadata: z.object({ resourceVersion: z.string().optional(), continue: z.string().optional() }).passthrough(),
  // A metadata-only list (PartialObjectMetadataList) with nothing in it says `items: null`.
  items: z
    .array(kubeObjectSchema)
    .nullable()
    .transform((items) => items ?? []),
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
