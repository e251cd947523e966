import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from '../kube/object.js';
import type { WatchEvent } from './events.js';

/**
 * Filters watch events before they become work, controller-runtime's predicate.Funcs: one decision
 * per event kind; a kind the predicate does not mention passes. Chosen per watched resource type,
 * never by `object.kind` (empty on many watch payloads).
 */
export interface Predicate {
  create?(e: Extract<WatchEvent, { type: 'create' }>): boolean;
  update?(e: Extract<WatchEvent, { type: 'update' }>): boolean;
  delete?(e: Extract<WatchEvent, { type: 'delete' }>): boolean;
  generic?(e: Extract<WatchEvent, { type: 'generic' }>): boolean;
}

export function passes(p: Predicate | undefined, e: WatchEvent): boolean {
  if (!p) return true;
  switch (e.type) {
    case 'create':
      return p.create?.(e) ?? true;
    case 'update':
      return p.update?.(e) ?? true;
    case 'delete':
      return p.delete?.(e) ?? true;
    case 'generic':
      return p.generic?.(e) ?? true;
  }
}

/** Lets through only the event kinds named (seed 003's allowed/blocked tables). */
export function onlyEvents(...types: Array<WatchEvent['type']>): Predicate {
  const allow = new Set(types);
  return {
    create: () => allow.has('create'),
    update: () => allow.has('update'),
    delete: () => allow.has('delete'),
    generic: () => allow.has('generic'),
  };
}

/** Updates pass only when metadata.generation changed (spec changes); other kinds pass. */
export const generationChanged: Predicate = {
  update: (e) => e.old.metadata.generation !== e.object.metadata.generation,
};

export const resourceVersionChanged: Predicate = {
  update: (e) => e.old.metadata.resourceVersion !== e.object.metadata.resourceVersion,
};

export const labelsChanged: Predicate = {
  update: (e) => !isDeepStrictEqual(e.old.metadata.labels ?? {}, e.object.metadata.labels ?? {}),
};

export const annotationsChanged: Predicate = {
  update: (e) => !isDeepStrictEqual(e.old.metadata.annotations ?? {}, e.object.metadata.annotations ?? {}),
};

/** Updates that set deletionTimestamp (the object is being deleted with finalizers). */
export const deletionStarted: Predicate = {
  update: (e) => !e.old.metadata.deletionTimestamp && Boolean(e.object.metadata.deletionTimestamp),
};

/** Every event whose object satisfies `test` (for updates: the new object). */
export function objectMatches(test: (obj: KubeObject) => boolean): Predicate {
  return {
    create: (e) => test(e.object),
    update: (e) => test(e.object),
    delete: (e) => test(e.object),
    generic: (e) => test(e.object),
  };
}

/** Equality-based label selector: every key=value in `match` is on the object. */
export function labelSelector(match: Record<string, string>): Predicate {
  return objectMatches((o) => Object.entries(match).every(([k, v]) => o.metadata.labels?.[k] === v));
}

export function nameIs(name: string, namespace?: string): Predicate {
  return objectMatches((o) => o.metadata.name === name && (namespace === undefined || o.metadata.namespace === namespace));
}

export function namespaceIs(namespace: string): Predicate {
  return objectMatches((o) => o.metadata.namespace === namespace);
}

type Kind = WatchEvent['type'];
const kinds: Kind[] = ['create', 'update', 'delete', 'generic'];

function combine(ps: Predicate[], join: (results: boolean[]) => boolean): Predicate {
  const out: Predicate = {};
  for (const kind of kinds) {
    (out as Record<Kind, (e: WatchEvent) => boolean>)[kind] = (e: WatchEvent) => join(ps.map((p) => passes(p, e)));
  }
  return out;
}

export const and = (...ps: Predicate[]): Predicate => combine(ps, (r) => r.every(Boolean));
export const or = (...ps: Predicate[]): Predicate => combine(ps, (r) => r.some(Boolean));
export const not = (p: Predicate): Predicate => combine([p], (r) => !r[0]);
