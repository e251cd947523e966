import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { objectMetaSchema } from '../../../kube/object.js';
import type { AdmissionDecision, JsonPatchOp } from '../../../runtime/webhook/admission-review.js';
import type { AdmissionWebhookDefinition } from '../../../runtime/webhook/types.js';
import { admitUndo, CONTROL_LABEL, CONTROL_LABEL_VALUE, isControlled, SERVICE_READY_CONDITION } from '../protocol/index.js';

const podSchema = z
  .object({
    metadata: objectMetaSchema.partial({ name: true }),
    spec: z.object({ readinessGates: z.array(z.object({ conditionType: z.string() }).passthrough()).nullish() }).passthrough().nullish(),
  })
  .passthrough();

/** Only Pods that take part: the API server does not even call the webhooks for others. */
const CONTROLLED = { matchLabels: { [CONTROL_LABEL]: CONTROL_LABEL_VALUE } };

/** The JSON patch that adds the service-ready gate to a Pod being created, or nothing if it has it. */
export function readinessGatePatch(pod: unknown): JsonPatchOp[] {
  const parsed = podSchema.safeParse(pod);
  if (!parsed.success || !isControlled(parsed.data.metadata.labels ?? {})) return [];
  const gates = parsed.data.spec?.readinessGates ?? [];
  if (gates.some((g) => g.conditionType === SERVICE_READY_CONDITION)) return [];
  const gate = { conditionType: SERVICE_READY_CONDITION };
  return parsed.data.spec?.readinessGates ? [{ op: 'add', path: '/spec/readinessGates/-', value: gate }] : [{ op: 'add', path: '/spec/readinessGates', value: [gate] }];
}

/** The JSON patch that applies undo in the same write (protocol/admitUndo), or nothing. */
export function undoPatch(pod: unknown): JsonPatchOp[] {
  const parsed = podSchema.safeParse(pod);
  if (!parsed.success) return [];
  const labels = parsed.data.metadata.labels ?? {};
  if (!isControlled(labels)) return [];
  const admitted = admitUndo(labels);
  return isDeepStrictEqual(admitted, labels) ? [] : [{ op: 'replace', path: '/metadata/labels', value: admitted }];
}

function allowWith(patch: JsonPatchOp[]): AdmissionDecision {
  return { allowed: true, patch };
}

export interface OpsLifecycleWebhookOptions {
  /**
   * For the Pod CREATE gate. Fail (default, as kuperator): a controlled Pod is not created without the gate,
   * because it could never gain it later. Ignore: Pods are created without it while the webhook is down.
   */
  createFailurePolicy?: 'Fail' | 'Ignore';
}

/**
 * ops-lifecycle's admission functions:
 * - `pod-readiness-gate`: Pod CREATE, adds `pod.kusionstack.io/service-ready` to spec.readinessGates (scenario 1);
 * - `pod-undo`: Pod UPDATE and pods/status UPDATE, applies a kuperator client's Undo in the same write
 *   (scenario 2). failurePolicy Ignore: if the webhook is down the reconciler still applies the undo on its next
 *   pass (the degraded behaviour: a Begin written after the Undo and before that pass loses its round, as before).
 */
export function opsLifecycleWebhooks(opts: OpsLifecycleWebhookOptions = {}): AdmissionWebhookDefinition[] {
  return [
    {
      name: 'pod-readiness-gate.ops-lifecycle.ripple.dev',
      path: 'ops-lifecycle/pod-readiness-gate',
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      objectSelector: CONTROLLED,
      namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-node-lease'] }] },
      failurePolicy: opts.createFailurePolicy ?? 'Fail',
      timeoutSeconds: 5,
      // Another webhook may add the control label after this one ran.
      reinvocationPolicy: 'IfNeeded',
      admit: (req) => allowWith(req.operation === 'CREATE' ? readinessGatePatch(req.object) : []),
    },
    {
      name: 'pod-undo.ops-lifecycle.ripple.dev',
      path: 'ops-lifecycle/pod-undo',
      rules: [{ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'pods/status'] }],
      objectSelector: CONTROLLED,
      namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-node-lease'] }] },
      failurePolicy: 'Ignore',
      timeoutSeconds: 5,
      admit: (req) => allowWith(req.operation === 'UPDATE' ? undoPatch(req.object) : []),
    },
  ];
}
