import type { KubeObject } from '../kube/object.js';

/**
 * What the watcher hands to predicates and mappers, controller-runtime's four event kinds. Updates
 * carry the old object from the watcher's own store, because client-node's watch gives only the new.
 * `synthetic` marks a delete inferred by a relist (the object vanished while the watch was down).
 */
export type WatchEvent =
  | { type: 'create'; object: KubeObject }
  | { type: 'update'; old: KubeObject; object: KubeObject }
  | { type: 'delete'; object: KubeObject; synthetic: boolean }
  | { type: 'generic'; object: KubeObject };
