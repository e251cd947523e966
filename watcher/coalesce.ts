import type { KubeObject } from '../kube/object.js';
import type { WatchEvent } from './events.js';

/** Same object, as far as can be told: a name reused after a delete has another uid. */
function sameObject(a: KubeObject, b: KubeObject): boolean {
  return !a.metadata.uid || !b.metadata.uid || a.metadata.uid === b.metadata.uid;
}

/**
 * Folds `next` into `prev`, two undelivered events of one key, when one event can stand for both:
 * create then update is a create of the newest object; update then update is one update from the
 * first old object to the newest (so old/new predicates compare what the handler last could have
 * seen with what is there now); anything then delete is the delete. A delete is never folded into
 * what follows it (a new object under the same name), and events of different uids stay apart, so
 * a mapper that reads the deleted object's owners still gets it. Returns undefined when both must stay.
 */
export function fold(prev: WatchEvent, next: WatchEvent): WatchEvent | undefined {
  if (prev.type === 'delete' || prev.type === 'generic' || next.type === 'generic' || next.type === 'create') return undefined;
  if (!sameObject(prev.object, next.object)) return undefined;
  if (next.type === 'delete') return next;
  // next is an update of the object prev created or updated.
  return prev.type === 'create' ? { type: 'create', object: next.object } : { type: 'update', old: prev.old, object: next.object };
}

/** Appends `next` to a key's undelivered events, folding it into the last one when it can. */
export function appendFolded(events: WatchEvent[], next: WatchEvent): WatchEvent[] {
  const last = events.at(-1);
  const folded = last ? fold(last, next) : undefined;
  return folded ? [...events.slice(0, -1), folded] : [...events, next];
}

/** Folds a whole run of one key's events, oldest first. */
export function foldAll(events: WatchEvent[]): WatchEvent[] {
  return events.reduce<WatchEvent[]>((acc, e) => appendFolded(acc, e), []);
}
