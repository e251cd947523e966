import { LabelPrefix, PER_ID_LABELS, type PerIdLabel } from './keys.js';

export class InvalidLifecycleLabelError extends Error {
  override readonly name = 'InvalidLifecycleLabelError';
  constructor(readonly key: string) {
    super(`invalid label ${key}`);
  }
}

export type IdLabels = Partial<Record<PerIdLabel, string>>;

export interface IdMap {
  /** id → which per-ID labels it carries (by short name) → value */
  ids: Map<string, IdLabels>;
  /** operation type → how many IDs carry it, counted from operation-type, else done-operation-type */
  typeCounts: Map<string, number>;
}

const PREFIX_TO_LABEL = new Map<string, PerIdLabel>(PER_ID_LABELS.map((l) => [LabelPrefix[l], l]));

/**
 * Splits a label key into a per-ID label and its ID, or undefined when the key is not a per-ID lifecycle label.
 * Throws for a bare prefix (no ID), which kuperator also rejects.
 */
export function splitPerIdKey(key: string): { label: PerIdLabel; id: string } | undefined {
  const slash = key.indexOf('/');
  const prefix = slash === -1 ? key : key.slice(0, slash);
  const label = PREFIX_TO_LABEL.get(prefix);
  if (label === undefined) return undefined;
  const id = slash === -1 ? '' : key.slice(slash + 1);
  if (id === '' || id.includes('/')) throw new InvalidLifecycleLabelError(key);
  return { label, id };
}

/**
 * Groups the lifecycle labels by ID.
 *
 * Unlike kuperator, which finds IDs only through operating/operate/operated, every per-ID prefix names an ID
 * here: an operator that finishes before `operate` drops `operating`, and upstream then never sees the
 * pre-checked/preparing/type labels left behind. Finding them lets the transition logic clean them up.
 */
export function idToLabelsMap(labels: Readonly<Record<string, string>>): IdMap {
  const ids = new Map<string, IdLabels>();
  for (const key of Object.keys(labels).sort()) {
    const parsed = splitPerIdKey(key);
    if (parsed === undefined) continue;
    let entry = ids.get(parsed.id);
    if (entry === undefined) {
      entry = {};
      ids.set(parsed.id, entry);
    }
    entry[parsed.label] = labels[key];
  }
  const typeCounts = new Map<string, number>();
  for (const entry of ids.values()) {
    const t = entry.operationType ?? entry.doneOperationType;
    if (t !== undefined) typeCounts.set(t, (typeCounts.get(t) ?? 0) + 1);
  }
  return { ids, typeCounts };
}

/** Like idToLabelsMap, but malformed keys are reported instead of thrown, and skipped. */
export function idToLabelsMapLenient(labels: Readonly<Record<string, string>>): IdMap & { invalidKeys: string[] } {
  const invalidKeys: string[] = [];
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) {
    try {
      splitPerIdKey(k);
      clean[k] = v;
    } catch (err) {
      if (!(err instanceof InvalidLifecycleLabelError)) throw err;
      invalidKeys.push(k);
    }
  }
  return { ...idToLabelsMap(clean), invalidKeys: invalidKeys.sort() };
}

export function isLifecycleOnPod(labels: Readonly<Record<string, string>>, id: string): boolean {
  return idToLabelsMapLenient(labels).ids.has(id);
}

export function numOfLifecycleOnPod(labels: Readonly<Record<string, string>>): number {
  return idToLabelsMapLenient(labels).ids.size;
}
