import { expectedFinalizersSatisfied } from './available-conditions.js';
import { idToLabelsMapLenient, type IdLabels } from './id-map.js';
import { Label, PER_ID_LABELS, PERMISSION_LABEL_PREFIX, perIdKey, permissionKey } from './keys.js';
import { hasServiceReadyGate, type PodState } from './pod-state.js';
import { readyToOperate } from './ready-to-operate.js';
import { isLive, stageOf } from './stage.js';
import { formatTimestamp, type UnixNanos } from './timestamp.js';
import { trafficOff, type TrafficOffMode } from './traffic-off.js';

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
  /**
   * Leave completed IDs in place even if everything else allows the cleanup: set for a write that itself adds
   * `completing` (see admitWrite). Unset, the cleanup happens whenever every ID is completing.
   */
  holdCleanup?: boolean;
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
 * needed); the admission webhook applies it through admitWrite, inside another writer's update.
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
      if ((input.expectedFinalizersSatisfied || stayOffline) && input.holdCleanup !== true) for (const [id] of live) removeId(out, id);
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

export interface WriteAdmissionInput {
  /** The labels as written. */
  labels: Readonly<Record<string, string>>;
  /** The labels stored before the write; absent at CREATE. */
  oldLabels?: Readonly<Record<string, string>>;
  /**
   * The Pod as this write will store it: finalizers and annotations from the write, the status conditions that
   * will be stored (the write's own for pods/status, the stored ones for an update of the Pod, whose status the
   * API server keeps), the readiness gates of its spec.
   */
  pod: Pick<PodState, 'finalizers' | 'annotations' | 'conditions' | 'readinessGates'>;
  /** The reconciler's OPS_LIFECYCLE_TRAFFIC_OFF: what must hold before operate, beyond readyToOperate. */
  trafficOffMode: TrafficOffMode;
  now: UnixNanos;
}

/**
 * Can operate be granted from what one write shows? The admission sees the Pod and nothing else, so in
 * `endpointslices` mode only a Pod without the gate (judged by the gate alone, as the reconciler does) can be;
 * every other Pod waits for the reconciler, which lists the EndpointSlices. In `ready` mode the Pod's own Ready
 * decides: a write that stores Ready not True can carry operate, but not the kubelet's own status write (NodeRestriction
 * refuses a node's status write that changes labels, so the webhook leaves it alone): operate comes in the next write
 * of someone else, the reconciler's at the latest. In `gate` mode the write that sets service-ready False can
 * (kuperator's behaviour).
 */
export function admissionReadyToOperate(pod: WriteAdmissionInput['pod'], mode: TrafficOffMode): boolean {
  if (!readyToOperate(pod)) return false;
  if (mode === 'endpointslices' && hasServiceReadyGate(pod)) return false;
  return trafficOff({ mode, pod, podName: '', endpoints: [] }).off;
}

/**
 * kuperator's mutating webhook on one write of a controlled Pod (CREATE, UPDATE, pods/status UPDATE): the label
 * transitions of admitLabels, made inside the writer's own write, so a Go client's Begin is answered with
 * `pre-check`, its Finish with `operated`, `done-operation-type` and `post-check`, its Undo without the ID, and
 * a cooperator's finalizer write (or the reconciler's status write) completes a round. Two things differ from
 * admitLabels as the reconciler calls it:
 * - operate is granted only when the write itself shows traffic off (admissionReadyToOperate);
 * - a write that adds `completing` is not cleaned up in that same write (kuperator's webhook is the only one to
 *   add completing there, so it never is; Ripple's reconciler writes completing itself, and without this rule the
 *   admission would clean the round up inside that write, before the gate turns True).
 */
export function admitWrite(input: WriteAdmissionInput): AdmissionResult {
  const before = input.oldLabels;
  const addsCompleting =
    before !== undefined && Object.keys(input.labels).some((k) => k.startsWith(perIdKey('completing', '')) && !(k in before));
  return admitLabels({
    labels: input.labels,
    ...(before !== undefined ? { previousLabels: before } : {}),
    readyToOperate: admissionReadyToOperate(input.pod, input.trafficOffMode),
    expectedFinalizersSatisfied: expectedFinalizersSatisfied(input.pod),
    holdCleanup: addsCompleting,
    now: input.now,
  });
}
