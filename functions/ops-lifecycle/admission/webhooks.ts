import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import type { AdmissionDecision, AdmissionRequest, JsonPatchOp } from '../../../runtime/webhook/admission-review.js';
import type { AdmissionWebhookDefinition } from '../../../runtime/webhook/types.js';
import {
  admitWrite,
  CONTROL_LABEL,
  CONTROL_LABEL_VALUE,
  isControlled,
  nanosFromDate,
  SERVICE_READY_CONDITION,
  type TrafficOffMode,
  type UnixNanos,
} from '../protocol/index.js';
import { admittedPodSchema, admittedPodState, type AdmittedPod } from './admitted-pod.js';
import { graceDeleteWebhook } from './grace-delete.js';

/** Only Pods that take part: the API server does not even call the webhooks for others. */
const CONTROLLED = { matchLabels: { [CONTROL_LABEL]: CONTROL_LABEL_VALUE } };
const NOT_SYSTEM = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn' as const, values: ['kube-system', 'kube-node-lease'] }] };

/** The JSON patch that adds the service-ready gate to a Pod being created, or nothing if it has it. */
export function readinessGatePatch(pod: unknown): JsonPatchOp[] {
  const parsed = admittedPodSchema.safeParse(pod);
  if (!parsed.success || !isControlled(parsed.data.metadata.labels ?? {})) return [];
  const gates = parsed.data.spec?.readinessGates ?? [];
  if (gates.some((g) => g.conditionType === SERVICE_READY_CONDITION)) return [];
  const gate = { conditionType: SERVICE_READY_CONDITION };
  return parsed.data.spec?.readinessGates ? [{ op: 'add', path: '/spec/readinessGates/-', value: gate }] : [{ op: 'add', path: '/spec/readinessGates', value: [gate] }];
}

/** The part of an admission request a transition depends on. */
export interface WriteReview {
  operation: AdmissionRequest['operation'];
  subResource?: string;
  object?: unknown;
  oldObject?: unknown;
  userInfo?: AdmissionRequest['userInfo'];
}

/**
 * A kubelet (`system:node:<node>`, group `system:nodes`). The NodeRestriction admission plugin, which runs after
 * the mutating webhooks, refuses a node's pods/status write whose labels differ from the stored Pod's ("node …
 * cannot update labels through pod status"): a label added to it would have that write refused forever.
 */
export function isNodeWriter(userInfo: WriteReview['userInfo']): boolean {
  if (!userInfo) return false;
  return (userInfo.username ?? '').startsWith('system:node:') || (userInfo.groups ?? []).includes('system:nodes');
}

/**
 * The label transitions of one write (protocol/admitWrite), as a JSON patch, or nothing. What the write will
 * store decides: on an update of the Pod the API server keeps the stored status (whatever the client sent), on
 * pods/status it keeps the stored spec, and a created Pod starts with no conditions; labels, annotations and
 * finalizers are the write's in all three.
 */
export function transitionsPatch(req: WriteReview, trafficOffMode: TrafficOffMode, now: UnixNanos): JsonPatchOp[] {
  // The kubelet's status writes pass unchanged; the reconciler, watching them, makes the transition one event later.
  if (req.subResource === 'status' && isNodeWriter(req.userInfo)) return [];
  const parsed = admittedPodSchema.safeParse(req.object);
  if (!parsed.success) return [];
  const pod = parsed.data;
  const labels = pod.metadata.labels ?? {};
  if (!isControlled(labels)) return [];
  let old: AdmittedPod | undefined;
  if (req.operation === 'UPDATE') {
    const parsedOld = admittedPodSchema.safeParse(req.oldObject);
    // Without the stored Pod there is no telling what the write changes: leave it to the reconciler.
    if (!parsedOld.success) return [];
    old = parsedOld.data;
  }
  // A new Pod is stored without the status its client sent (the Pod strategy resets it after admission).
  const statusFrom = old === undefined ? { ...pod, status: {} } : req.subResource === 'status' ? pod : old;
  const specFrom = req.subResource === 'status' && old !== undefined ? old : pod;
  const admitted = admitWrite({
    labels,
    ...(old !== undefined ? { oldLabels: old.metadata.labels ?? {} } : {}),
    pod: admittedPodState(pod, statusFrom, specFrom),
    trafficOffMode,
    now,
  }).labels;
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
  /** The reconciler's OPS_LIFECYCLE_TRAFFIC_OFF, so that the webhook never grants operate earlier than it would. */
  trafficOff?: TrafficOffMode;
  /**
   * Delete through the lifecycle (kuperator's GraceDelete), off unless given: the cluster it begins delete
   * operations on (it needs pods get and patch there).
   */
  graceDelete?: { kc: KubeConfig };
}

/**
 * ops-lifecycle's admission functions:
 * - `pod-readiness-gate`: Pod CREATE, adds `pod.kusionstack.io/service-ready` to spec.readinessGates (scenario 1)
 *   and makes the transitions of the labels the Pod is created with;
 * - `pod-lifecycle`: Pod UPDATE and pods/status UPDATE, kuperator's same-write transitions (scenario 2): Begin,
 *   Finish and Undo are answered as kuperator's webhook answers them. failurePolicy Ignore: while it is down the
 *   reconciler makes the same transitions one watch event later (docs/ops-lifecycle.md, "If the webhook is down").
 */
export function opsLifecycleWebhooks(opts: OpsLifecycleWebhookOptions = {}): AdmissionWebhookDefinition[] {
  const mode = opts.trafficOff ?? 'endpointslices';
  const webhooks: AdmissionWebhookDefinition[] = [
    {
      name: 'pod-readiness-gate.ops-lifecycle.ripple.dev',
      path: 'ops-lifecycle/pod-readiness-gate',
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      objectSelector: CONTROLLED,
      namespaceSelector: NOT_SYSTEM,
      failurePolicy: opts.createFailurePolicy ?? 'Fail',
      timeoutSeconds: 5,
      // Another webhook may add the control label after this one ran.
      reinvocationPolicy: 'IfNeeded',
      admit: (req, now) => allowWith(req.operation === 'CREATE' ? [...readinessGatePatch(req.object), ...transitionsPatch(req, mode, nanosFromDate(now))] : []),
    },
    {
      name: 'pod-lifecycle.ops-lifecycle.ripple.dev',
      path: 'ops-lifecycle/pod-lifecycle',
      rules: [{ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'pods/status'] }],
      objectSelector: CONTROLLED,
      namespaceSelector: NOT_SYSTEM,
      failurePolicy: 'Ignore',
      timeoutSeconds: 5,
      admit: (req, now) => allowWith(req.operation === 'UPDATE' ? transitionsPatch(req, mode, nanosFromDate(now)) : []),
    },
  ];
  if (opts.graceDelete) webhooks.push(graceDeleteWebhook(opts.graceDelete));
  return webhooks;
}
