/**
 * LeaderWorkerSet compatibility, the pure half: the shadow ModelServing a LeaderWorkerSet is served
 * through, and the LeaderWorkerSet status read back from the ModelServing's (Kthena's
 * controller/lws_controller.go: `constructModelServing`, `updateLWSStatus`).
 *
 * The shadow has the LeaderWorkerSet's name and namespace and is controlled by it (so it goes with it);
 * it has one role, `default`, with one instance per group: the leader is the entry pod (the leader
 * template, or the worker template without one) and `size - 1` workers; `lws-standard-labels` gives the
 * pods LWS's labels. Beyond Kthena, the LeaderWorkerSet's rolling-update settings (partition, maxUnavailable,
 * maxSurge: the same meaning on groups) and `restartPolicy: None` are carried over.
 */
import type { LeaderWorkerSet, LeaderWorkerSetStatus, LwsPodTemplate } from '../../../api/leaderworkerset.js';
import { LWS_API_VERSION, LWS_GROUP, LWS_KIND } from '../../../api/leaderworkerset.js';
import { MODEL_SERVING_API_VERSION, MODEL_SERVING_KIND, type Condition, type ModelServingStatus } from '../../../api/modelserving.js';
import type { OwnerReference } from '../../../kube/object.js';
import { canonicalJson, hashOf } from '../plan/revision.js';

/** The hash of the spec the shadow was last written with: the next reconcile writes only when it moved. */
export const LWS_SPEC_HASH_ANNOTATION = 'ripple.dev/leaderworkerset-spec-hash';
/** Server-side apply's field manager of the shadow's spec. */
export const SHADOW_FIELD_MANAGER = 'ripple-leaderworkerset';
/** Kthena's role name for the shadow's only role. */
export const SHADOW_ROLE = 'default';

export interface ShadowModelServing {
  /** A server-side apply body: the whole object this function owns. */
  body: Record<string, unknown>;
  hash: string;
}

function template(t: LwsPodTemplate): Record<string, unknown> {
  const labels = t.metadata?.labels;
  const annotations = t.metadata?.annotations;
  const metadata = { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
  return { ...(Object.keys(metadata).length ? { metadata } : {}), spec: t.spec };
}

export function shadowModelServing(lws: LeaderWorkerSet): ShadowModelServing {
  const lwt = lws.spec.leaderWorkerTemplate;
  const ru = lws.spec.rolloutStrategy?.rollingUpdateConfiguration;
  const spec: Record<string, unknown> = {
    replicas: lws.spec.replicas,
    plugins: [{ name: 'lws-standard-labels', type: 'BuiltIn' }],
    template: {
      roles: [
        {
          name: SHADOW_ROLE,
          replicas: 1,
          workerReplicas: Math.max(lwt.size - 1, 0),
          entryTemplate: template(lwt.leaderTemplate ?? lwt.workerTemplate),
          workerTemplate: template(lwt.workerTemplate),
        },
      ],
    },
    ...(ru
      ? {
          rolloutStrategy: {
            type: 'ServingGroupRollingUpdate',
            rollingUpdateConfiguration: { maxUnavailable: ru.maxUnavailable, maxSurge: ru.maxSurge, partition: ru.partition },
          },
        }
      : {}),
    ...(lwt.restartPolicy === 'None' ? { recoveryPolicy: 'None' } : {}),
  };
  const hash = hashOf(spec);
  return {
    hash,
    body: {
      apiVersion: MODEL_SERVING_API_VERSION,
      kind: MODEL_SERVING_KIND,
      metadata: {
        name: lws.metadata.name,
        namespace: lws.metadata.namespace,
        annotations: { [LWS_SPEC_HASH_ANNOTATION]: hash },
        ownerReferences: [
          { apiVersion: LWS_API_VERSION, kind: LWS_KIND, name: lws.metadata.name, uid: lws.metadata.uid, controller: true, blockOwnerDeletion: true },
        ],
      },
      spec,
    },
  };
}

/** The LeaderWorkerSet that controls a ModelServing, from its owner references. */
export function lwsOwnerOf(meta: { ownerReferences?: readonly OwnerReference[] | undefined }): { name: string; uid: string } | undefined {
  const ref = meta.ownerReferences?.find((o) => o.controller === true && o.kind === LWS_KIND && o.apiVersion.startsWith(`${LWS_GROUP}/`));
  return ref ? { name: ref.name, uid: ref.uid } : undefined;
}

/** Kthena's condition types are LWS's own (Available, Progressing, UpdateInProgress). */
const LWS_CONDITIONS = new Set(['Available', 'Progressing', 'UpdateInProgress']);

/**
 * The LeaderWorkerSet's status from its shadow's (Kthena: replicas and readyReplicas; Ripple also
 * updatedReplicas, the scale selector, the conditions and observedGeneration), or undefined when the
 * LeaderWorkerSet already says it.
 */
export function lwsStatusFrom(lws: LeaderWorkerSet, ms: ModelServingStatus): LeaderWorkerSetStatus | undefined {
  const generation = lws.metadata.generation;
  const conditions = (ms.conditions ?? [])
    .filter((c) => LWS_CONDITIONS.has(c.type))
    .map((c): Condition => ({ ...c, ...(generation !== undefined ? { observedGeneration: generation } : {}) }));
  const next: LeaderWorkerSetStatus = {
    replicas: ms.replicas ?? 0,
    readyReplicas: ms.availableReplicas ?? 0,
    updatedReplicas: ms.updatedReplicas ?? 0,
    ...(ms.labelSelector ? { hpaPodSelector: ms.labelSelector } : {}),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    ...(conditions.length ? { conditions } : {}),
  };
  return canonicalJson(next) === canonicalJson(lws.status ?? {}) ? undefined : next;
}
