/**
 * LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`), the API of sigs.k8s.io/lws, shaped from its Go types
 * (api/leaderworkerset/v1): the same group, kind, fields, defaults, subresources and printer columns, so
 * manifests written for LWS apply unchanged. Ripple serves it through a shadow ModelServing, as Kthena's
 * lws_controller.go does (functions/reconcile-modelserving/lws/); docs/modelserving.md says which fields
 * it honours.
 *
 * One zod schema serves the CRD (`infra/crds/leaderworkerset.yaml`, through api/crd.ts; the pod templates
 * embed Kubernetes' own PodSpec schema from api/openapi/) and `parseLeaderWorkerSet`, which reads an object
 * the API server has already validated.
 */
import { z } from 'zod';
import { KUBERNETES_SCHEMA_KEY, type CrdOptions } from './crd.js';
import { ConditionSchema, ObjectMetaSchema } from './modelserving.js';

export const LWS_GROUP = 'leaderworkerset.x-k8s.io';
export const LWS_VERSION = 'v1';
export const LWS_API_VERSION = `${LWS_GROUP}/${LWS_VERSION}`;
export const LWS_KIND = 'LeaderWorkerSet';

const stringMap = z.record(z.string(), z.string());

/** What LWS's CRD keeps of a pod template's metadata (controller-gen's embedded ObjectMeta). */
const LwsTemplateMetadataSchema = z.object({
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  name: z.string().optional(),
  namespace: z.string().optional(),
  finalizers: z.array(z.string()).optional(),
});

export const LwsPodTemplateSchema = z.object({
  metadata: LwsTemplateMetadataSchema.optional(),
  spec: z
    .looseObject({ containers: z.array(z.looseObject({ name: z.string() })) })
    .meta({ description: 'Specification of the desired behavior of the pod (core/v1 PodSpec).', [KUBERNETES_SCHEMA_KEY]: 'io.k8s.api.core.v1.PodSpec' }),
});

const intOrString = (description: string) =>
  z.union([z.int(), z.string()]).describe(description).meta({ 'x-kubernetes-int-or-string': true });

export const LeaderWorkerTemplateSchema = z.object({
  leaderTemplate: LwsPodTemplateSchema.optional().describe('Pod template of the leader; the worker template when unset.'),
  workerTemplate: LwsPodTemplateSchema.describe('Pod template of the workers (and of the leader without a leaderTemplate).'),
  size: z.int32().min(1).default(1).describe('Pods per group, the leader included.'),
  restartPolicy: z
    .enum(['Default', 'RecreateGroupOnPodRestart', 'RecreateGroupAfterStart', 'None'])
    .default('RecreateGroupOnPodRestart')
    .describe('What happens to a group when one of its pods restarts.'),
  subGroupPolicy: z
    .object({
      subGroupPolicyType: z.enum(['LeaderWorker', 'LeaderExcluded']).default('LeaderWorker').optional(),
      subGroupSize: z.int32().optional(),
    })
    .optional()
    .describe('Splits a group into subgroups for exclusive placement (not used by Ripple).'),
  volumeClaimTemplates: z
    .array(z.looseObject({}))
    .optional()
    .describe('PersistentVolumeClaims per group (not supported by Ripple: ignored, docs/modelserving.md).'),
  persistentVolumeClaimRetentionPolicy: z
    .object({ whenDeleted: z.string().optional(), whenScaled: z.string().optional() })
    .optional(),
});

export const LwsRollingUpdateConfigurationSchema = z.object({
  partition: z.int32().min(0).default(0).describe('Groups with an index below this keep their revision during an update.'),
  maxUnavailable: intOrString('Groups that may be unavailable during an update (integer or percentage).').default(1),
  maxSurge: intOrString('Groups that may be created above replicas during an update (integer or percentage).').default(0),
});

export const LeaderWorkerSetSpecSchema = z.object({
  replicas: z.int32().min(0).max(1_000_000).default(1).describe('Number of groups.'),
  leaderWorkerTemplate: LeaderWorkerTemplateSchema,
  rolloutStrategy: z
    .object({
      type: z.enum(['RollingUpdate']).default('RollingUpdate'),
      rollingUpdateConfiguration: LwsRollingUpdateConfigurationSchema.optional(),
    })
    .optional(),
  startupPolicy: z.enum(['LeaderCreated', 'LeaderReady']).default('LeaderCreated').describe('When the workers are created.'),
  networkConfig: z.object({ subdomainPolicy: z.enum(['Shared', 'UniquePerReplica']) }).optional(),
});

export const LeaderWorkerSetStatusSchema = z.object({
  conditions: z.array(ConditionSchema).optional().meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  readyReplicas: z.int32().optional().describe('Groups whose pods are all ready.'),
  updatedReplicas: z.int32().optional().describe('Groups on the latest template.'),
  replicas: z.int32().optional().describe('Groups that exist.'),
  hpaPodSelector: z.string().optional().describe('Selects one pod per group, for the scale subresource.'),
  observedGeneration: z.int().optional().meta({ format: 'int64' }),
});

export const LeaderWorkerSetSchema = z.object({
  apiVersion: z.literal(LWS_API_VERSION),
  kind: z.literal(LWS_KIND),
  metadata: ObjectMetaSchema,
  spec: LeaderWorkerSetSpecSchema,
  status: LeaderWorkerSetStatusSchema.optional(),
});

export type LeaderWorkerSet = z.infer<typeof LeaderWorkerSetSchema>;
export type LeaderWorkerSetStatus = z.infer<typeof LeaderWorkerSetStatusSchema>;
export type LwsPodTemplate = z.infer<typeof LwsPodTemplateSchema>;

/** An object read from the API server, with LWS's defaults applied; undefined when it does not parse. */
export function parseLeaderWorkerSet(obj: unknown): LeaderWorkerSet | undefined {
  const parsed = LeaderWorkerSetSchema.safeParse(obj);
  return parsed.success ? parsed.data : undefined;
}

/** The CRD generated into `infra/crds/leaderworkerset.yaml` (see `api/generate-crds.ts`). */
export const LEADER_WORKER_SET_CRD: CrdOptions = {
  group: LWS_GROUP,
  kind: LWS_KIND,
  plural: 'leaderworkersets',
  singular: 'leaderworkerset',
  shortNames: ['lws'],
  scope: 'Namespaced',
  // Says whose copy this is: `ripple doctor` and an operator can tell it from the one LWS installs.
  annotations: { 'ripple.dev/crd-source': 'shaped from sigs.k8s.io/lws api/leaderworkerset/v1; served by reconcile-modelserving' },
  versions: [
    {
      name: LWS_VERSION,
      schema: LeaderWorkerSetSchema,
      storage: true,
      subresources: {
        status: true,
        scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.hpaPodSelector' },
      },
      additionalPrinterColumns: [
        { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas', description: 'Number of ready replicas' },
        { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas', description: 'Number of desired replicas' },
        { name: 'Up-to-date', type: 'integer', jsonPath: '.status.updatedReplicas', description: 'Number of up-to-date replicas' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  ],
};
