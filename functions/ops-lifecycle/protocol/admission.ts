import { idToLabelsMapLenient, type IdLabels } from './id-map.js';
import { Label, PER_ID_LABELS, PERMISSION_LABEL_PREFIX, perIdKey, permissionKey } from './keys.js';
import { isLive, stageOf } from './stage.js';
import { formatTimestamp, type UnixNanos } from './timestamp.js';

export interface AdmissionInput {
  labels: Readonly<Record<string, string>>;
  /**
   * The labels before the write being admitted (kuperator's old Pod). An ID's operation type is read from here
   * first when it turns into done-operation-type, so a writer that dropped the type with `operating` is covered.
   */
  previousLabels?: Readonly<Record<string, string>>;
  /** See readyToOperate(); passed in so the table of cases can pin it. */
  readyToOperate: boolean;
  /** Every expected finalizer of available-conditions is on the Pod (stale ones already discounted). */
  expectedFinalizersSatisfied: boolean;
  now: UnixNanos;
}

export interface AdmissionResult {
  labels: Record<string, string>;
  /** Per-ID keys without an ID; left alone, reported so the caller can warn. */
  invalidKeys: string[];
}

function removeId(out: Record<string, string>, id: string): void {
  for (const l of PER_ID_LABELS) delete out[perIdKey(l, id)];
}

/**
 * The label mutation kuperator's mutating webhook makes on every write of a controlled Pod, as a pure function
 * from the labels being written to the labels to store. Ripple's reconciler applies it itself (no webhook is
 * needed); a Hono admission webhook could apply it to make a transition atomic with another writer's update.
 *
 * Per ID: undo clears the ID; `operating` gets `pre-check`, then (once pre-checked) `preparing`, then `operate`
 * when readyToOperate; `post-checked` becomes `completing`. Then the barriers across IDs:
 * 1. while any ID still holds `operating`, no ID moves past `operate`;
 * 2. when every ID is completing and the expected finalizers are satisfied, all their labels go;
 * 3. when every ID has reached `operate`, each becomes `operated` with its type moved to done-operation-type
 *    and its permission dropped; when every ID has reached operated, each gets `post-check`.
 *
 * Where Ripple differs from kuperator (see docs/ops-lifecycle.md):
 * - IDs are found through every per-ID prefix, and an ID left without `operating` before `operate` is cleared
 *   like an undo instead of lingering;
 * - undone and abandoned IDs do not count in the barriers (they are gone after this write), and an ID already
 *   past a barrier counts as having reached it (upstream deadlocks when an ID begins while another completes);
 * - cleanup removes every per-ID label of a completed ID, not only the post-operate ones;
 * - a permission label whose type no remaining ID carries is removed;
 * - with `stay-offline`, cleanup does not wait for expected finalizers, because cooperation controllers never
 *   re-add them to a Pod kept out of service.
 */
export function admitLabels(input: AdmissionInput): AdmissionResult {
  const { ids, invalidKeys } = idToLabelsMapLenient(input.labels);
  const out: Record<string, string> = { ...input.labels };
  const ts = formatTimestamp(input.now);
  const stayOffline = Label.stayOffline in input.labels;

  const live: Array<[string, IdLabels]> = [];
  for (const [id, l] of ids) {
    if (isLive(stageOf(l))) live.push([id, l]);
    else removeId(out, id);
  }

  let operating = 0;
  let operate = 0;
  let operated = 0;
  let completing = 0;
  for (const [id, l] of live) {
    if (l.operating !== undefined) {
      operating++;
      if (l.preChecked !== undefined) {
        delete out[perIdKey('preCheck', id)];
        if (l.preparing === undefined && l.operate === undefined) {
          delete out[Label.serviceAvailable];
          out[perIdKey('preparing', id)] = ts;
        }
        // Both steps may land in one write: that is how one ID's gate change cannot strand another (#170).
        if (l.operate === undefined && input.readyToOperate) {
          delete out[perIdKey('preparing', id)];
          out[perIdKey('operate', id)] = ts;
        }
      } else if (l.preCheck === undefined) {
        out[perIdKey('preCheck', id)] = ts;
      }
    }
    if (l.postChecked !== undefined) {
      delete out[perIdKey('postCheck', id)];
      if (l.completing === undefined) out[perIdKey('completing', id)] = ts;
    }
    // Counted from the labels as written, not as mutated: cleanup never lands in the write that adds completing.
    // An ID further along counts as having passed the earlier barrier: kuperator counts only the operate and
    // operated labels themselves, and operate is gone once an ID is operated, so an ID that begins while
    // another is completing deadlocks there (the new one waits at operate for all to have operate; the old one
    // waits for all to be completing).
    const pastOperated = l.operated !== undefined || l.postCheck !== undefined || l.postChecked !== undefined || l.completing !== undefined;
    if (l.operate !== undefined || pastOperated) operate++;
    if (pastOperated) operated++;
    if (l.completing !== undefined) completing++;
  }

  const n = live.length;
  if (n > 0 && operating === 0) {
    if (completing === n) {
      if (input.expectedFinalizersSatisfied || stayOffline) for (const [id] of live) removeId(out, id);
    } else {
      if (operate === n) {
        for (const [id, l] of live) {
          delete out[perIdKey('preChecked', id)];
          if (stageOf(l) === 'operate') {
            delete out[perIdKey('operate', id)];
            out[perIdKey('operated', id)] = ts;
            operated++;
          }
          const type = input.previousLabels?.[perIdKey('operationType', id)] ?? l.operationType;
          if (type === undefined) continue;
          delete out[permissionKey(type)];
          delete out[perIdKey('operationType', id)];
          out[perIdKey('doneOperationType', id)] = type;
        }
      }
      if (operated === n) {
        for (const [id, l] of live) {
          if (l.postCheck === undefined && l.postChecked === undefined) out[perIdKey('postCheck', id)] = ts;
        }
      }
    }
  }

  dropOrphanPermissions(out);
  return { labels: out, invalidKeys };
}

/** A permission label is per type; it outlives no ID of that type. */
function dropOrphanPermissions(out: Record<string, string>): void {
  const prefix = `${PERMISSION_LABEL_PREFIX}/`;
  const typePrefix = perIdKey('operationType', '');
  const liveTypes = new Set<string>();
  for (const [k, v] of Object.entries(out)) if (k.startsWith(typePrefix)) liveTypes.add(v);
  for (const k of Object.keys(out)) {
    if (k.startsWith(prefix) && !liveTypes.has(k.slice(prefix.length))) delete out[k];
  }
}

/**
 * The undo half of kuperator's webhook, for a write made by someone else: every ID carrying
 * `undo-operation-type` loses all its labels in that same write, and a permission label no remaining ID needs
 * goes with them. A Go client's BeginWithCleaningOld (Undo, then Begin in the next update) then begins on a clean
 * ID; without it the undo label would still be there at Begin, and the reconciler would strip the new round too.
 * Only undo is done here: everything that depends on the Pod's traffic (operate) stays the reconciler's.
 */
export function admitUndo(labels: Readonly<Record<string, string>>): Record<string, string> {
  const { ids } = idToLabelsMapLenient(labels);
  const out: Record<string, string> = { ...labels };
  let undone = false;
  for (const [id, l] of ids) {
    if (stageOf(l) !== 'undoing') continue;
    removeId(out, id);
    undone = true;
  }
  if (undone) dropOrphanPermissions(out);
  return out;
}
