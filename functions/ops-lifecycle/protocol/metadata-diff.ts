/** A change to a string map (labels or annotations): keys to set and keys to delete. */
export interface MapDiff {
  set: Record<string, string>;
  remove: string[];
}

export function emptyDiff(): MapDiff {
  return { set: {}, remove: [] };
}

export function diffMaps(before: Readonly<Record<string, string>>, after: Readonly<Record<string, string>>): MapDiff {
  const set: Record<string, string> = {};
  const remove: string[] = [];
  for (const k of Object.keys(after).sort()) if (before[k] !== after[k]) set[k] = after[k] as string;
  for (const k of Object.keys(before).sort()) if (!(k in after)) remove.push(k);
  return { set, remove };
}

export function isEmptyDiff(d: MapDiff): boolean {
  return d.remove.length === 0 && Object.keys(d.set).length === 0;
}

export function applyDiff(before: Readonly<Record<string, string>>, d: MapDiff): Record<string, string> {
  const out = { ...before };
  for (const k of d.remove) delete out[k];
  Object.assign(out, d.set);
  return out;
}

/** The JSON merge patch (RFC 7386) of a diff: null deletes a key. */
export function mergePatchOf(d: MapDiff): Record<string, string | null> {
  const patch: Record<string, string | null> = {};
  for (const k of d.remove) patch[k] = null;
  Object.assign(patch, d.set);
  return patch;
}
