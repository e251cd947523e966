import { z } from 'zod';
import { idToLabelsMapLenient, type IdLabels } from './id-map.js';
import { Label, PER_ID_LABELS, PERMISSION_LABEL_PREFIX, TYPE_VALUED_LABELS, type PerIdLabel } from './keys.js';
import { isControlled } from './pod-state.js';
import {
  isLive,
  leastAdvanced,
  phaseOf,
  stageOf,
  type LifecyclePhase,
  type LifecycleStage,
  type PodLifecyclePhase,
} from './stage.js';
import { parseTimestamp, type UnixNanos } from './timestamp.js';

/** A Kubernetes label value (what an operation type must be to be written as one). */
export const OperationTypeSchema = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/, 'not a valid label value');

/** The name part of a label key (what a lifecycle ID must be to be written as one). */
export const LifecycleIdSchema = OperationTypeSchema;

export type TimestampLabel = Exclude<PerIdLabel, 'operationType' | 'undoOperationType' | 'doneOperationType'>;

export interface LifecycleEntry {
  id: string;
  stage: LifecycleStage;
  /** undefined for undoing/abandoned IDs, which the next write removes */
  phase: LifecyclePhase | undefined;
  /** operation-type, while the operation is running; afterwards done-operation-type */
  type: string | undefined;
  /** the operator still holds the ID (operating label present) */
  operating: boolean;
  /** parsed timestamps of the timestamp-valued labels present */
  timestamps: Partial<Record<TimestampLabel, UnixNanos>>;
  labels: IdLabels;
}

export interface LifecycleView {
  controlled: boolean;
  /** all IDs on the Pod, sorted by ID, including undoing/abandoned ones */
  lifecycles: LifecycleEntry[];
  phase: PodLifecyclePhase;
  serviceAvailable: boolean;
  stayOffline: boolean;
  preparingToDelete: boolean;
  /** operation-permission labels: type → timestamp (undefined when the value is not one) */
  permissions: Map<string, UnixNanos | undefined>;
  /** malformed keys and values; the handler reports them as Warning events */
  problems: string[];
}

function entryOf(id: string, labels: IdLabels, problems: string[]): LifecycleEntry {
  const stage = stageOf(labels);
  const timestamps: Partial<Record<TimestampLabel, UnixNanos>> = {};
  for (const l of PER_ID_LABELS) {
    const v = labels[l];
    if (v === undefined) continue;
    if (TYPE_VALUED_LABELS.has(l)) {
      if (!OperationTypeSchema.safeParse(v).success) problems.push(`lifecycle ${id}: ${l} value "${v}" is not a valid type`);
      continue;
    }
    const ts = parseTimestamp(v);
    // kuperator itself writes "true" into some of these in tests; the value matters only for operate.
    if (ts === undefined) problems.push(`lifecycle ${id}: ${l} value "${v}" is not a Unix-nanosecond timestamp`);
    else timestamps[l as TimestampLabel] = ts;
  }
  if (labels.operating !== undefined && labels.operationType === undefined) {
    problems.push(`lifecycle ${id}: operating without operation-type; it cannot pass pre-check, and while it holds operating no other ID gets past operate (add the type, or remove the ID)`);
  }
  return {
    id,
    stage,
    phase: phaseOf(stage),
    type: labels.operationType ?? labels.doneOperationType,
    operating: labels.operating !== undefined,
    timestamps,
    labels,
  };
}

export function parseLifecycleView(labels: Readonly<Record<string, string>>): LifecycleView {
  const { ids, invalidKeys } = idToLabelsMapLenient(labels);
  const problems = invalidKeys.map((k) => `invalid label ${k}`);
  const lifecycles = [...ids.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, l]) => entryOf(id, l, problems));

  const permissions = new Map<string, UnixNanos | undefined>();
  const permPrefix = `${PERMISSION_LABEL_PREFIX}/`;
  for (const [k, v] of Object.entries(labels)) if (k.startsWith(permPrefix)) permissions.set(k.slice(permPrefix.length), parseTimestamp(v));

  const serviceAvailable = Label.serviceAvailable in labels;
  const livePhases = lifecycles.filter((e) => isLive(e.stage)).map((e) => e.phase as LifecyclePhase);
  const phase: PodLifecyclePhase = leastAdvanced(livePhases) ?? (serviceAvailable ? 'ServiceAvailable' : 'NotServiceAvailable');

  return {
    controlled: isControlled(labels),
    lifecycles,
    phase,
    serviceAvailable,
    stayOffline: Label.stayOffline in labels,
    preparingToDelete: Label.preparingToDelete in labels,
    permissions,
    problems,
  };
}

export function liveLifecycles(view: LifecycleView): LifecycleEntry[] {
  return view.lifecycles.filter((e) => isLive(e.stage));
}
