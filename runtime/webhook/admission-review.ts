import { z } from 'zod';

/** The part of an admission.k8s.io/v1 AdmissionReview request a webhook reads; the rest passes through. */
export const admissionReviewSchema = z.object({
  apiVersion: z.literal('admission.k8s.io/v1'),
  kind: z.literal('AdmissionReview'),
  request: z
    .object({
      uid: z.string().min(1),
      kind: z.object({ group: z.string(), version: z.string(), kind: z.string() }),
      resource: z.object({ group: z.string(), version: z.string(), resource: z.string() }),
      subResource: z.string().optional(),
      operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
      namespace: z.string().optional(),
      name: z.string().optional(),
      object: z.record(z.string(), z.unknown()).nullish(),
      oldObject: z.record(z.string(), z.unknown()).nullish(),
      dryRun: z.boolean().optional(),
      /** Who is writing: a kubelet is `system:node:<node>` in group `system:nodes`. */
      userInfo: z.object({ username: z.string().optional(), groups: z.array(z.string()).nullish() }).passthrough().optional(),
    })
    .passthrough(),
});
export type AdmissionRequest = z.infer<typeof admissionReviewSchema>['request'];

/** One RFC 6902 operation; the API server applies the list to the object as sent. */
export interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace';
  path: string;
  value?: unknown;
}

export type AdmissionDecision = { allowed: true; patch?: JsonPatchOp[]; warnings?: string[] } | { allowed: false; message: string; code?: number };

/** The AdmissionReview answer for a decision: a JSONPatch, base64 encoded, when there is something to change. */
export function admissionResponse(uid: string, decision: AdmissionDecision): Record<string, unknown> {
  const response: Record<string, unknown> = { uid, allowed: decision.allowed };
  if (decision.allowed) {
    if (decision.patch && decision.patch.length > 0) {
      response.patchType = 'JSONPatch';
      response.patch = Buffer.from(JSON.stringify(decision.patch)).toString('base64');
    }
    if (decision.warnings && decision.warnings.length > 0) response.warnings = decision.warnings;
  } else {
    response.status = { code: decision.code ?? 403, message: decision.message };
  }
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

/** A JSON Pointer segment (RFC 6901): `~` and `/` escaped, as in label keys such as `kusionstack.io/control`. */
export function pointerSegment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
