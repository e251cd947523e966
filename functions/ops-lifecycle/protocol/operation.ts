import { idToLabelsMapLenient } from './id-map.js';
import { CONTROL_LABEL, CONTROL_LABEL_VALUE, Label, PER_ID_LABELS, perIdKey, permissionKey, LabelPrefix } from './keys.js';
import { diffMaps, isEmptyDiff, type MapDiff } from './metadata-diff.js';
import { isControlled } from './pod-state.js';
import { stageOf, type LifecycleStage } from './stage.js';
import { formatTimestamp, NANOS_PER_MILLI, parseTimestamp, type UnixNanos } from './timestamp.js';
import { LifecycleIdSchema, OperationTypeSchema } from './view.js';

/** What an operation controller may change besides the lifecycle labels, in the same write. */
export interface MetadataDraft {
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface HookContext {
  now: UnixNanos;
}

/** Edits the draft in place. Whether anything changed is found by comparing, not by the hook's say-so. */
export type MetadataHook = (draft: MetadataDraft, ctx: HookContext) => void;

/**
 * Who an operation controller is to the lifecycle. The seed's Go interface (GetID, GetType, AllowMultiType,
 * WhenBegin, WhenFinish) as plain data plus optional hooks.
 */
export interface OperationAdapter {
  /** The lifecycle ID; one ID runs one lifecycle at a time on a Pod. A label name: ≤ 63 chars. */
  readonly id: string;
  /** The operation type (`update`, `scale-in`, `delete`, …). A label value. */
  readonly type: string;
  /** May other IDs with this same type run on the Pod at the same time? */
  readonly allowMultiType: boolean;
  readonly whenBegin?: MetadataHook;
  readonly whenFinish?: MetadataHook;
  /** Not in kuperator: lets an adapter take back what whenBegin added (e.g. preparing-to-delete) on undo. */
  readonly whenUndo?: MetadataHook;
}

export type OperationErrorCode = 'TypeConflict' | 'InvalidAdapter' | 'NotControlled';

export class OpsLifecycleError extends Error {
  override readonly name = 'OpsLifecycleError';
  constructor(
    readonly code: OperationErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface PodMetadataInput {
  labels?: Readonly<Record<string, string>>;
  annotations?: Readonly<Record<string, string>>;
}

export interface OperationOptions {
  now: UnixNanos;
  /** Extra hooks run before the adapter's own (kuperator's `fns...`). */
  hooks?: readonly MetadataHook[];
}

/** The metadata after the operation and the patch that takes the Pod there. */
export interface OperationResult {
  /** false: nothing to write */
  changed: boolean;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  patch: { labels: MapDiff; annotations: MapDiff };
}

function draftOf(pod: PodMetadataInput): MetadataDraft {
  return { labels: { ...(pod.labels ?? {}) }, annotations: { ...(pod.annotations ?? {}) } };
}

function resultOf(pod: PodMetadataInput, draft: MetadataDraft): OperationResult {
  const labels = diffMaps(pod.labels ?? {}, draft.labels);
  const annotations = diffMaps(pod.annotations ?? {}, draft.annotations);
  return {
    changed: !isEmptyDiff(labels) || !isEmptyDiff(annotations),
    labels: draft.labels,
    annotations: draft.annotations,
    patch: { labels, annotations },
  };
}

function runHooks(draft: MetadataDraft, ctx: HookContext, hooks: ReadonlyArray<MetadataHook | undefined>): void {
  for (const h of hooks) h?.(draft, ctx);
}

function validateAdapter(adapter: OperationAdapter): void {
  if (!LifecycleIdSchema.safeParse(adapter.id).success) {
    throw new OpsLifecycleError('InvalidAdapter', `lifecycle ID "${adapter.id}" is not a valid label name`);
  }
  if (!OperationTypeSchema.safeParse(adapter.type).success) {
    throw new OpsLifecycleError('InvalidAdapter', `operation type "${adapter.type}" is not a valid label value`);
  }
}

/** DuringOps: the ID holds `operating` with this adapter's type, from Begin until Finish. */
export function isDuringOps(pod: PodMetadataInput, adapter: Pick<OperationAdapter, 'id' | 'type'>): boolean {
  const labels = pod.labels ?? {};
  return perIdKey('operating', adapter.id) in labels && labels[perIdKey('operationType', adapter.id)] === adapter.type;
}

/** Deletes every label of the ID, and its type's permission when no other ID carries that type any more. */
function clearId(labels: Record<string, string>, id: string, fallbackType: string): void {
  const type = labels[perIdKey('operationType', id)] ?? labels[perIdKey('undoOperationType', id)] ?? fallbackType;
  for (const l of PER_ID_LABELS) delete labels[perIdKey(l, id)];
  const typePrefix = `${LabelPrefix.operationType}/`;
  const stillUsed = Object.entries(labels).some(([k, v]) => k.startsWith(typePrefix) && v === type);
  if (!stillUsed) delete labels[permissionKey(type)];
}

/**
 * Starts the adapter's lifecycle on the Pod: `operating/<id>=now` and `operation-type/<id>=<type>`.
 * Idempotent while the ID is operating with this type (hooks still run; a hook that changes nothing costs no
 * write). Throws OpsLifecycleError:
 * - `operationType <type> exists: [<keys>]` when another ID already carries this type and !allowMultiType;
 * - `operatingID <id> already has operationType <other>` when the ID is operating under another type
 *   (kuperator overwrites the type there; switching types mid-flight is a bug in the caller);
 * - when the Pod lacks `kusionstack.io/control=true`: nothing would ever advance its lifecycle.
 * Labels left by an earlier, finished or abandoned, round of the same ID are cleared first, so the new round
 * starts clean instead of inheriting its predecessor's completing/operated labels.
 */
export function begin(pod: PodMetadataInput, adapter: OperationAdapter, opts: OperationOptions): OperationResult {
  validateAdapter(adapter);
  const draft = draftOf(pod);
  if (!isControlled(draft.labels)) {
    throw new OpsLifecycleError('NotControlled', `pod is not labelled ${CONTROL_LABEL}=${CONTROL_LABEL_VALUE}; its lifecycle would never advance`);
  }
  const operatingKey = perIdKey('operating', adapter.id);
  const typeKey = perIdKey('operationType', adapter.id);
  const currentType = draft.labels[typeKey];

  if (operatingKey in draft.labels && currentType !== undefined && currentType !== adapter.type) {
    throw new OpsLifecycleError('TypeConflict', `operatingID ${adapter.id} already has operationType ${currentType}`);
  }
  if (!(operatingKey in draft.labels && currentType === adapter.type)) {
    const typePrefix = `${LabelPrefix.operationType}/`;
    const others = Object.entries(draft.labels)
      .filter(([k, v]) => k.startsWith(typePrefix) && k !== typeKey && v === adapter.type)
      .map(([k]) => k)
      .sort();
    if (others.length > 0 && !adapter.allowMultiType) {
      throw new OpsLifecycleError('TypeConflict', `operationType ${adapter.type} exists: [${others.join(' ')}]`);
    }
    if (!(operatingKey in draft.labels)) {
      if (isLifecycleIdPresent(draft.labels, adapter.id)) clearId(draft.labels, adapter.id, adapter.type);
      draft.labels[operatingKey] = formatTimestamp(opts.now);
    }
    draft.labels[typeKey] = adapter.type;
  }

  runHooks(draft, { now: opts.now }, [...(opts.hooks ?? []), adapter.whenBegin]);
  return resultOf(pod, draft);
}

function isLifecycleIdPresent(labels: Readonly<Record<string, string>>, id: string): boolean {
  return PER_ID_LABELS.some((l) => perIdKey(l, id) in labels);
}

export interface AllowOpsOptions {
  now: UnixNanos;
  /** Wait this long after the `operate` label appeared before operating (OperationJob's operationDelaySeconds). */
  operationDelaySeconds?: number;
}

export interface AllowOpsResult {
  allowed: boolean;
  /** Set while an operation delay is running: requeue after this long, then ask again. */
  requeueAfterMs?: number;
}

/**
 * May the operator act on the Pod now? Only during ops, once the lifecycle granted `operate/<id>`, and, with a
 * delay, only once the delay since the operate timestamp has passed. Unlike kuperator (which answers true and
 * leaves the requeue to a caller that may ignore it), a running delay answers false: the delay really delays.
 * An operate value that is not a timestamp cannot be counted from and does not delay (kuperator's answer).
 */
export function allowOps(pod: PodMetadataInput, adapter: Pick<OperationAdapter, 'id' | 'type'>, opts: AllowOpsOptions): AllowOpsResult {
  if (!isDuringOps(pod, adapter)) return { allowed: false };
  const operateValue = pod.labels?.[perIdKey('operate', adapter.id)];
  if (operateValue === undefined) return { allowed: false };
  const delaySeconds = opts.operationDelaySeconds ?? 0;
  if (!(delaySeconds > 0)) return { allowed: true };
  const started = parseTimestamp(operateValue);
  if (started === undefined) return { allowed: true };
  const delay = BigInt(Math.ceil(delaySeconds * 1000)) * NANOS_PER_MILLI;
  const elapsed = opts.now - started;
  if (elapsed >= delay) return { allowed: true };
  // A clock behind the writer's makes elapsed negative; never ask for more than one full delay.
  const remaining = delay - (elapsed < 0n ? 0n : elapsed);
  return { allowed: false, requeueAfterMs: Number((remaining + NANOS_PER_MILLI - 1n) / NANOS_PER_MILLI) };
}

const PRE_OPERATE: ReadonlySet<LifecycleStage> = new Set(['begun', 'pre-check', 'pre-checked', 'preparing', 'abandoned', 'undoing']);

/**
 * Ends the operator's part: drops `operating/<id>`; the lifecycle then moves the ID on through operated,
 * post-check and completing. Before `operate` was granted there is nothing to complete, so the ID is cleared
 * outright (kuperator leaves its pre-checked/preparing/type/permission labels behind there).
 * Throws `operatingID <id> has invalid operationType <t>` when the ID runs under another type.
 */
export function finish(pod: PodMetadataInput, adapter: OperationAdapter, opts: OperationOptions): OperationResult {
  const draft = draftOf(pod);
  const currentType = draft.labels[perIdKey('operationType', adapter.id)];
  if (currentType !== undefined && currentType !== adapter.type) {
    throw new OpsLifecycleError('TypeConflict', `operatingID ${adapter.id} has invalid operationType ${currentType}`);
  }
  const labels = idToLabelsMapLenient(draft.labels).ids.get(adapter.id);
  if (labels !== undefined) {
    if (PRE_OPERATE.has(stageOf(labels))) clearId(draft.labels, adapter.id, adapter.type);
    else delete draft.labels[perIdKey('operating', adapter.id)];
  }
  runHooks(draft, { now: opts.now }, [...(opts.hooks ?? []), adapter.whenFinish]);
  return resultOf(pod, draft);
}

/**
 * Cancels the ID: every label of the ID goes in this one write, with its type's permission when no other ID
 * carries that type. kuperator writes `undo-operation-type/<id>` and lets its webhook do the clearing; the
 * reconciler still honours that label from other writers, but doing it here needs no second actor.
 * Nothing to do (changed=false) when the ID is not on the Pod.
 */
export function undo(pod: PodMetadataInput, adapter: OperationAdapter, opts: OperationOptions): OperationResult {
  const draft = draftOf(pod);
  if (!isLifecycleIdPresent(draft.labels, adapter.id)) return resultOf(pod, draft);
  clearId(draft.labels, adapter.id, adapter.type);
  runHooks(draft, { now: opts.now }, [...(opts.hooks ?? []), adapter.whenUndo]);
  return resultOf(pod, draft);
}

/**
 * Undo the ID's current round if there is one, then begin a new one, in a single write (kuperator: two
 * updates). Used to restart an update that is still completing when the next update arrives (#295).
 */
export function beginWithCleaningOld(pod: PodMetadataInput, adapter: OperationAdapter, opts: OperationOptions): OperationResult {
  const undone = undo(pod, adapter, opts);
  const next = begin({ labels: undone.labels, annotations: undone.annotations }, adapter, opts);
  return resultOf(pod, { labels: next.labels, annotations: next.annotations });
}

/** whenBegin of the delete and scale-in adapters: tells others the Pod is about to go. */
export const markPreparingToDelete: MetadataHook = (draft, { now }) => {
  if (!(Label.preparingToDelete in draft.labels)) draft.labels[Label.preparingToDelete] = formatTimestamp(now);
};

/** whenUndo counterpart of markPreparingToDelete: a cancelled deletion no longer announces itself. */
export const clearPreparingToDelete: MetadataHook = (draft) => {
  delete draft.labels[Label.preparingToDelete];
};
