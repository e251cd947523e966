import type { KubeObject } from '../kube/object.js';
import type { WatchEvent } from './events.js';

/** Keys objects by namespace/name, the identity the API server guarantees within one resource type. */
export function storeKey(obj: KubeObject): string {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * The last object seen per key (kube-rs's reflector Store). It keeps the old object so update
 * predicates can compare old and new, and it diffs a relist against what it held so objects that
 * vanished while the watch was down come out as synthetic deletes.
 */
export class ObjectStore {
  private readonly objects = new Map<string, KubeObject>();

  get(key: string): KubeObject | undefined {
    return this.objects.get(key);
  }

  list(namespace?: string): KubeObject[] {
    const all = [...this.objects.values()];
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
  }

  get size(): number {
    return this.objects.size;
  }

  /** Applies one watch event; returns what it means given what the store held. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): WatchEvent | undefined {
    const key = storeKey(obj);
    const old = this.objects.get(key);
    if (type === 'DELETED') {
      this.objects.delete(key);
      return { type: 'delete', object: obj, synthetic: false };
    }
    this.objects.set(key, obj);
    if (!old) return { type: 'create', object: obj };
    // resourceVersions are opaque: equal means unchanged, nothing else may be inferred from them.
    if (old.metadata.resourceVersion === obj.metadata.resourceVersion) return undefined;
    // A same-name object with another uid is a new object (deleted and recreated in a gap).
    if (old.metadata.uid && obj.metadata.uid && old.metadata.uid !== obj.metadata.uid) return { type: 'create', object: obj };
    return { type: 'update', old, object: obj };
  }

  /** Replaces the contents with a fresh list and returns the differences as events. */
  replace(items: KubeObject[]): WatchEvent[] {
    const events: WatchEvent[] = [];
    const fresh = new Map(items.map((o) => [storeKey(o), o]));
    for (const [key, old] of this.objects) {
      const now = fresh.get(key);
      if (!now) events.push({ type: 'delete', object: old, synthetic: true });
      else if (old.metadata.uid && now.metadata.uid && old.metadata.uid !== now.metadata.uid) {
        events.push({ type: 'delete', object: old, synthetic: true }, { type: 'create', object: now });
      } else if (old.metadata.resourceVersion !== now.metadata.resourceVersion) {
        events.push({ type: 'update', old, object: now });
      }
    }
    for (const [key, obj] of fresh) if (!this.objects.has(key)) events.push({ type: 'create', object: obj });
    this.objects.clear();
    for (const [key, obj] of fresh) this.objects.set(key, obj);
    return events;
  }
}
