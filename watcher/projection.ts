import type { KubeObject } from '../kube/object.js';

/**
 * What of a watched object the watcher keeps, declared on a trigger next to the predicate and mapper
 * that read it (controller-runtime's builder.OnlyMetadata, generalised to a few named fields).
 * metadata (without managedFields), kind and apiVersion are always kept; `keep` names the other fields
 * the trigger's predicate and mapper read, and what any mapper listing this resource through
 * MapContext reads of it. An empty `keep` is a metadata-only watch: the API server is asked for
 * PartialObjectMetadata and sends nothing else. A trigger without a projection keeps the whole object.
 *
 * Paths are dotted field names from the object's root ('spec.selector', 'status.conditions'); what
 * they name is kept whole (arrays included). A path that is absent on an object is simply absent.
 */
export interface Projection {
  keep: readonly string[];
}

/** Only metadata: the predicate and the mapper read nothing else (and no mapper lists the resource for more). */
export const ONLY_METADATA: Projection = { keep: [] };

/** Metadata plus the fields named. */
export function keepFields(...paths: string[]): Projection {
  return { keep: paths };
}

/**
 * The projection of a watch shared by several triggers: the union of what they keep, or the whole
 * object as soon as one of them declared none (it may read anything).
 */
export function mergeProjections(declared: ReadonlyArray<Projection | undefined>): Projection | undefined {
  if (declared.length === 0 || declared.some((p) => p === undefined)) return undefined;
  const keep = new Set<string>();
  for (const p of declared) for (const path of p?.keep ?? []) keep.add(path);
  return { keep: [...keep].sort() };
}

/** For logs: what a watch keeps. */
export function describeProjection(p: Projection | undefined): string {
  if (p === undefined) return 'whole objects without managedFields';
  return p.keep.length === 0 ? 'metadata only' : `metadata, ${p.keep.join(', ')}`;
}

export function isMetadataOnly(p: Projection | undefined): boolean {
  return p !== undefined && p.keep.length === 0;
}

/** metadata without managedFields: nothing in Ripple reads who set which field, and it is often half the object. */
function leanMetadata(metadata: KubeObject['metadata']): KubeObject['metadata'] {
  if (!('managedFields' in metadata)) return metadata;
  const { managedFields: _dropped, ...rest } = metadata;
  return rest as KubeObject['metadata'];
}

function readPath(obj: unknown, parts: readonly string[]): unknown {
  let at: unknown = obj;
  for (const part of parts) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

function writePath(target: Record<string, unknown>, parts: readonly string[], value: unknown): void {
  let at = target;
  for (const part of parts.slice(0, -1)) {
    const next = at[part];
    if (typeof next === 'object' && next !== null && !Array.isArray(next)) at = next as Record<string, unknown>;
    else {
      const fresh: Record<string, unknown> = {};
      at[part] = fresh;
      at = fresh;
    }
  }
  at[parts[parts.length - 1] as string] = value;
}

/**
 * The object as the store and the delivery buffer hold it. A new object is built (the parsed payload
 * is dropped), so what was not kept can be collected at once; kept fields are shared, not copied.
 */
export function project(obj: KubeObject, projection: Projection | undefined): KubeObject {
  const metadata = leanMetadata(obj.metadata);
  if (projection === undefined) return metadata === obj.metadata ? obj : { ...obj, metadata };
  const out: Record<string, unknown> = {};
  if (obj.apiVersion !== undefined) out.apiVersion = obj.apiVersion;
  if (obj.kind !== undefined) out.kind = obj.kind;
  out.metadata = metadata;
  for (const path of projection.keep) {
    const parts = path.split('.').filter(Boolean);
    if (parts.length === 0 || parts[0] === 'metadata') continue;
    const value = readPath(obj, parts);
    if (value !== undefined) writePath(out, parts, value);
  }
  return out as KubeObject;
}
