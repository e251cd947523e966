import type { Mapper } from '../runtime/function.js';
import type { KubeObject } from '../kube/object.js';
import { storeKey } from './store.js';

/** The object itself (controller-runtime's EnqueueRequestForObject). */
export const mapToSelf: Mapper = (e) => [storeKey(e.object)];

/** The controller owner matched by group and kind, not version (EnqueueRequestForOwner, OnlyControllerOwner). */
export function mapToControllerOwner(owner: { group: string; kind: string }): Mapper {
  const ownerOf = (obj: KubeObject): string[] => {
    const ref = obj.metadata.ownerReferences?.find((r) => r.controller === true);
    if (!ref || ref.kind !== owner.kind) return [];
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.slice(0, ref.apiVersion.indexOf('/')) : '';
    if (group !== owner.group) return [];
    return [obj.metadata.namespace ? `${obj.metadata.namespace}/${ref.name}` : ref.name];
  };
  // On update, both the old and the new owner: an owner change must reach both.
  return (e) => [...new Set([...(e.type === 'update' ? ownerOf(e.old) : []), ...ownerOf(e.object)])];
}
