/**
 * Ownership of children. Kthena's rule, with the fix for kthena#1712: a child whose controller is a
 * *previous* ModelServing of the same name (same kind and name, another UID) is a leftover that the
 * garbage collector has not removed yet. It is not ours, it must not be counted, and we delete it
 * (with a UID precondition) instead of waiting, because it holds a name we need.
 */
import type { V1OwnerReference } from '@kubernetes/client-node';
import { MODEL_SERVING_API_VERSION, MODEL_SERVING_GROUP, MODEL_SERVING_KIND, type ModelServing } from '../../../api/modelserving.js';

export type Ownership = 'ours' | 'stale' | 'foreign';

export function controllerOwnerReference(ms: ModelServing): V1OwnerReference {
  const uid = ms.metadata.uid;
  if (!uid) throw new Error(`ModelServing ${ms.metadata.name} has no metadata.uid; plan only objects read from the API server`);
  return {
    apiVersion: MODEL_SERVING_API_VERSION,
    kind: MODEL_SERVING_KIND,
    name: ms.metadata.name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Only the owner references are read: typed client objects and raw JSON parsed with kube/object.ts both fit. */
type OwnedMeta = { ownerReferences?: ReadonlyArray<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }> };

export function ownershipOf(meta: OwnedMeta | undefined, ms: ModelServing): Ownership {
  const ref = meta?.ownerReferences?.find((r) => r.controller === true);
  if (!ref || ref.kind !== MODEL_SERVING_KIND || ref.apiVersion.split('/')[0] !== MODEL_SERVING_GROUP) return 'foreign';
  if (ref.uid === ms.metadata.uid) return 'ours';
  return ref.name === ms.metadata.name ? 'stale' : 'foreign';
}
