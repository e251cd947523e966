/**
 * What a plan asks the handler to do. The handler applies the actions in order and stops at the first
 * failure (the next reconcile plans again from fresh state). Creates are create-if-absent: 409
 * AlreadyExists is success. Deletes carry the UID they were decided for, as a precondition: 404 and a
 * failed precondition (the name now belongs to a replacement) are success too.
 */
import type { V1ControllerRevision, V1Pod, V1Service } from '@kubernetes/client-node';
import type { DesiredDisruptionBudget } from './disruption.js';
import type { PodGroupObject, PodGroupSpec } from './gang.js';

export type Action =
  | { kind: 'createControllerRevision'; object: V1ControllerRevision; reason: string }
  | { kind: 'deleteControllerRevision'; name: string; uid: string; resourceVersion?: string; reason: string }
  /** A revision that becomes the update revision again (a rollback) takes the next number, as a StatefulSet's does. */
  | { kind: 'renumberControllerRevision'; name: string; resourceVersion: string; revision: number; reason: string }
  | { kind: 'createPodGroup'; podGroup: PodGroupObject; reason: string }
  | { kind: 'updatePodGroup'; name: string; uid: string; resourceVersion?: string; spec: PodGroupSpec; reason: string }
  | { kind: 'deletePodGroup'; name: string; uid: string; resourceVersion?: string; reason: string }
  | { kind: 'createDisruptionBudget'; object: DesiredDisruptionBudget; reason: string }
  /** Opens or closes a group's PodDisruptionBudget, preconditioned on the resourceVersion read. */
  | { kind: 'setDisruptionBudget'; name: string; resourceVersion: string; maxUnavailable: number | string; reason: string }
  | { kind: 'deleteDisruptionBudget'; name: string; uid: string; resourceVersion?: string; reason: string }
  | { kind: 'createPod'; pod: V1Pod; reason: string }
  | { kind: 'deletePod'; name: string; uid: string; resourceVersion?: string; reason: string }
  | { kind: 'createService'; service: V1Service; reason: string }
  | { kind: 'deleteService'; name: string; uid: string; resourceVersion?: string; reason: string };

export type ActionKind = Action['kind'];

/** A one-line description for logs and tests: `createPod ms-0-prefill-0-0`. */
export function describeAction(a: Action): string {
  switch (a.kind) {
    case 'createControllerRevision':
      return `${a.kind} ${a.object.metadata?.name ?? ''}`;
    case 'createPodGroup':
      return `${a.kind} ${a.podGroup.metadata.name}`;
    case 'createDisruptionBudget':
      return `${a.kind} ${a.object.metadata.name}`;
    case 'createPod':
      return `${a.kind} ${a.pod.metadata?.name ?? ''}`;
    case 'createService':
      return `${a.kind} ${a.service.metadata?.name ?? ''}`;
    default:
      return `${a.kind} ${a.name}`;
  }
}

/**
 * Work the spec asks for that cannot be done as written, reported on status while the rest is
 * reconciled: generated names over Kubernetes' 63 characters, or names held by objects that are not
 * this ModelServing's.
 */
export interface Blocked {
  reason: 'NameTooLong' | 'NameTaken';
  message: string;
}
