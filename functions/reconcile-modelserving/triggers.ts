/**
 * What wakes reconcile-modelserving, as predicates over watch events (controller-runtime's
 * `For(ModelServing).Owns(Pod).Owns(Service)`), chosen per watched resource type.
 */
import { isDeepStrictEqual } from 'node:util';
import { asRecord as asPlainRecord } from '../../kube/json.js';
import type { KubeObject } from '../../kube/object.js';
import type { Predicate } from '../../watcher/predicates.js';
import { ANNOTATION_VOLCANO_QUEUE, LABEL_NAME } from './plan/names.js';
import { LIFECYCLE_OPT_IN_ANNOTATION } from './lifecycle.js';
import { EVICTION_PROTECTION_ANNOTATION } from './plan/disruption.js';
import { PROGRESS_DEADLINE_ANNOTATION } from '../../api/modelserving.js';

/** Server-side selector for the children's watches: only objects a ModelServing labelled. */
export const CHILDREN_SELECTOR = LABEL_NAME;

/** ModelServing annotations that change what the function does (the rest are the user's business). */
const BEHAVIOUR_ANNOTATIONS = [LIFECYCLE_OPT_IN_ANNOTATION, ANNOTATION_VOLCANO_QUEUE, PROGRESS_DEADLINE_ANNOTATION, EVICTION_PROTECTION_ANNOTATION];

function annotation(obj: KubeObject, key: string): string | undefined {
  return obj.metadata.annotations?.[key];
}

/**
 * ModelServing updates that need a reconcile: a spec change (generation), deletion starting, or one
 * of the annotations the function reads. Status-only updates are left out on purpose: the function
 * writes status itself, and reacting to its own writes would double every reconcile. A status
 * someone else overwrote is put right by the next child event or the resync tick.
 */
export const modelServingChanged: Predicate = {
  update: (e) =>
    e.old.metadata.generation !== e.object.metadata.generation ||
    (!e.old.metadata.deletionTimestamp && Boolean(e.object.metadata.deletionTimestamp)) ||
    BEHAVIOUR_ANNOTATIONS.some((k) => annotation(e.old, k) !== annotation(e.object, k)),
};

interface PodView {
  phase?: unknown;
  nodeName?: unknown;
  conditions: Array<[unknown, unknown]>;
  restarts: number;
}

function asRecord(v: unknown): Record<string, unknown> {
  return asPlainRecord(v) ?? {};
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** The part of a pod's spec/status the planner decides on (see plan/observed.ts `podFacts`). */
function podView(obj: KubeObject): PodView {
  const status = asRecord((obj as Record<string, unknown>).status);
  const spec = asRecord((obj as Record<string, unknown>).spec);
  const restarts = [...asArray(status.containerStatuses), ...asArray(status.initContainerStatuses)].reduce<number>((n, s) => {
    const c = asRecord(s).restartCount;
    return n + (typeof c === 'number' ? c : 0);
  }, 0);
  return {
    phase: status.phase,
    nodeName: spec.nodeName,
    // Ready's status and when it last moved (restartGracePeriodSeconds counts from there); for the
    // others only their presence and status (PodScheduled tells a scheduler looked at the pod).
    conditions: asArray(status.conditions).map((c) => {
      const r = asRecord(c);
      return [r.type, r.type === 'Ready' ? `${String(r.status)}@${String(r.lastTransitionTime)}` : r.status];
    }),
    restarts,
  };
}

/**
 * Pod updates that can change a plan: labels (revision, lifecycle stages), annotations (deletion cost),
 * deletion starting, owner, and the status facts above. Heartbeat-like churn (IPs, container state
 * details, timestamps) does not reach the queue.
 */
export const podFactsChanged: Predicate = {
  update: (e) =>
    !isDeepStrictEqual(e.old.metadata.labels ?? {}, e.object.metadata.labels ?? {}) ||
    !isDeepStrictEqual(e.old.metadata.annotations ?? {}, e.object.metadata.annotations ?? {}) ||
    !isDeepStrictEqual(e.old.metadata.ownerReferences ?? [], e.object.metadata.ownerReferences ?? []) ||
    Boolean(e.old.metadata.deletionTimestamp) !== Boolean(e.object.metadata.deletionTimestamp) ||
    !isDeepStrictEqual(podView(e.old), podView(e.object)),
};

/** Services: creation, deletion, and changes to what identifies or owns them. */
export const serviceChanged: Predicate = {
  update: (e) =>
    !isDeepStrictEqual(e.old.metadata.labels ?? {}, e.object.metadata.labels ?? {}) ||
    !isDeepStrictEqual(e.old.metadata.ownerReferences ?? [], e.object.metadata.ownerReferences ?? []) ||
    Boolean(e.old.metadata.deletionTimestamp) !== Boolean(e.object.metadata.deletionTimestamp),
};
