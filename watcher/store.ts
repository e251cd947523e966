import type { KubeObject } from '../kube/object.js';
import type { WatchEvent } from './events.js';

/** Keys objects by namespace/name, the identity the API server guarantees within one resource type. */
export function storeKey(obj: KubeObject): string {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name}` : name;
}

/** What a relisted object means given what the store held under its key (no event when unchanged). */
function difference(old: KubeObject | undefined, now: KubeObject): WatchEvent[] {
  if (!old) return [{ type: 'create', object: now }];
  // A same-name object with another uid is a new object (deleted and recreated in a gap).
  if (old.metadata.uid && now.metadata.uid && old.metadata.uid !== now.metadata.uid) {
    return [
      { type: 'delete', object: old, synthetic: true },
      { type: 'create', object: now },
    ];
  }
  // resourceVersions are opaque: equal means unchanged, nothing else may be inferred from them.
  if (old.metadata.resourceVersion !== now.metadata.resourceVersion) return [{ type: 'update', old, object: now }];
  return [];
}

/**
 * A relist in progress (ObjectStore.beginRelist): pages are fed in as they arrive and each object is
 * diffed against the store and put into it at once (mark), so no second map of the whole resource is
 * ever built; `finish` then removes what no page carried (sweep) as synthetic deletes. What it holds
 * besides the store is the set of keys seen, a few dozen bytes per object.
 */
export interface Relist {
  /** Diffs one listed object against the store, stores it, and returns what it means. */
  add(obj: KubeObject): WatchEvent[];
  /** Removes every object no page carried; returns their synthetic deletes. */
  finish(): WatchEvent[];
}

/**
 * The last object seen per key (kube-rs's reflector Store), indexed by namespace so a lookup in one
 * namespace costs what it returns. It keeps the old object so update predicates can compare old and
 * new, and it diffs a relist against what it held so objects that vanished while the watch was down
 * come out as synthetic deletes.
 */
export class ObjectStore {
  /** namespace ('' for cluster-scoped objects) → key → object. */
  private readonly byNamespace = new Map<string, Map<string, KubeObject>>();
  private count = 0;

  get(key: string): KubeObject | undefined {
    const slash = key.indexOf('/');
    return this.byNamespace.get(slash < 0 ? '' : key.slice(0, slash))?.get(key);
  }

  /** The objects of one namespace (a fresh array of that namespace's objects only), or all of them. */
  list(namespace?: string): KubeObject[] {
    if (namespace !== undefined) return [...(this.byNamespace.get(namespace)?.values() ?? [])];
    const all: KubeObject[] = [];
    for (const objects of this.byNamespace.values()) for (const o of objects.values()) all.push(o);
    return all;
  }

  get size(): number {
    return this.count;
  }

  /** Applies one watch event; returns what it means given what the store held. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): WatchEvent | undefined {
    const key = storeKey(obj);
    if (type === 'DELETED') {
      this.remove(key, obj);
      return { type: 'delete', object: obj, synthetic: false };
    }
    const old = this.put(key, obj);
    if (!old) return { type: 'create', object: obj };
    if (old.metadata.resourceVersion === obj.metadata.resourceVersion) return undefined;
    if (old.metadata.uid && obj.metadata.uid && old.metadata.uid !== obj.metadata.uid) return { type: 'create', object: obj };
    return { type: 'update', old, object: obj };
  }

  beginRelist(): Relist {
    const seen = new Set<string>();
    return {
      add: (obj) => {
        const key = storeKey(obj);
        seen.add(key);
        return difference(this.put(key, obj), obj);
      },
      finish: () => {
        const events: WatchEvent[] = [];
        for (const objects of [...this.byNamespace.values()]) {
          for (const [key, old] of [...objects]) {
            if (seen.has(key)) continue;
            this.remove(key, old);
            events.push({ type: 'delete', object: old, synthetic: true });
          }
        }
        return events;
      },
    };
  }

  /** Replaces the contents with a complete list and returns the differences as events. */
  replace(items: Iterable<KubeObject>): WatchEvent[] {
    const relist = this.beginRelist();
    const events: WatchEvent[] = [];
    for (const item of items) events.push(...relist.add(item));
    events.push(...relist.finish());
    return events;
  }

  /** Stores `obj` under `key`; returns what was there. */
  private put(key: string, obj: KubeObject): KubeObject | undefined {
    const ns = obj.metadata.namespace ?? '';
    let objects = this.byNamespace.get(ns);
    if (!objects) {
      objects = new Map();
      this.byNamespace.set(ns, objects);
    }
    const old = objects.get(key);
    objects.set(key, obj);
    if (!old) this.count++;
    return old;
  }

  private remove(key: string, obj: KubeObject): void {
    const ns = obj.metadata.namespace ?? '';
    const objects = this.byNamespace.get(ns);
    if (!objects?.delete(key)) return;
    this.count--;
    // An emptied namespace goes, so namespaces created and deleted over time do not pile up.
    if (objects.size === 0) this.byNamespace.delete(ns);
  }
}
