/**
 * ModelServing (`workload.serving.volcano.sh/v1alpha1`): Kthena's API, field for field.
 *
 * One zod schema serves two purposes: `parseModelServing` checks an object read from the API server
 * (failures become `ConfigValid=False` with field paths), and `api/crd.ts` turns the same schema into
 * the CRD's structural OpenAPI schema. Rules the API server can enforce are written as schema
 * constraints or CEL (`x-kubernetes-validations` in `.meta`); rules it cannot (or should not, see
 * `semanticErrors`) run only in `parseModelServing`.
 *
 * Pod templates are not modelled field by field in zod: `parseModelServing` checks only what the
 * controller itself relies on, while the CRD embeds Kubernetes' own PodSpec schema, generated from the
 * committed snapshot of the API server's OpenAPI document (`api/openapi/`), so the API server refuses a
 * misspelled or mistyped pod field at apply time and `kubectl explain` documents it.
 */
import { z } from 'zod';
import { PhaseSchema } from '../status/schema.js';
import { KUBERNETES_SCHEMA_KEY, type CrdOptions } from './crd.js';

export const MODEL_SERVING_GROUP = 'workload.serving.volcano.sh';
export const MODEL_SERVING_VERSION = 'v1alpha1';
export const MODEL_SERVING_API_VERSION = `${MODEL_SERVING_GROUP}/${MODEL_SERVING_VERSION}`;
export const MODEL_SERVING_KIND = 'ModelServing';
export const MODEL_SERVING_PLURAL = 'modelservings';

/** The scheduler name that turns on gang scheduling (a Volcano PodGroup per ServingGroup). */
export const VOLCANO_SCHEDULER_NAME = 'volcano';

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const PERCENT = /^(100|[1-9]?[0-9])%$/;

/** Kubernetes IntOrString with Kthena's rule: a non-negative integer or a percentage 0%–100%. */
const intOrPercent = (description: string) =>
  z
    .union([z.int(), z.string()])
    .describe(description)
    .meta({
      'x-kubernetes-int-or-string': true,
      'x-kubernetes-validations': [
        {
          rule: `type(self) == string ? self.matches('${PERCENT.source}') : self >= 0`,
          message: 'must be a non-negative integer or a percentage from 0% to 100%',
        },
      ],
    });

/** CEL: an IntOrString field that is not literally 0 or "0%". */
const nonZero = (field: string) => `(type(${field}) == string ? ${field} != '0%' : ${field} != 0)`;

export const IntOrStringSchema = z.union([z.int(), z.string()]);
export type IntOrString = z.infer<typeof IntOrStringSchema>;

const stringMap = z.record(z.string(), z.string());

/** Kthena's trimmed ObjectMeta for pod templates: only labels and annotations are kept. */
const TemplateMetadataSchema = z.object({
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
});

const ContainerSchema = z
  .looseObject({
    name: z.string().min(1, 'a container needs a name'),
    image: z
      .string()
      .regex(/^\S*$/, 'an image reference cannot contain whitespace')
      .optional(),
  })
  .describe('A core/v1 Container; fields other than name and image are passed through unchanged.');

/**
 * A core/v1 PodSpec. Only what the controller depends on is checked here (containers, names, images);
 * the rest is passed through. In the CRD this node is Kubernetes' own PodSpec schema (the meta key), so
 * the API server has already refused unknown and mistyped fields when the object was written.
 */
const podSpec = (containers: z.ZodArray<typeof ContainerSchema>) =>
  z
    .looseObject({
      containers,
      initContainers: z.array(ContainerSchema).optional(),
      schedulerName: z.string().optional(),
    })
    .meta({
      description: 'Specification of the desired behavior of the pod (core/v1 PodSpec).',
      [KUBERNETES_SCHEMA_KEY]: 'io.k8s.api.core.v1.PodSpec',
    });

export const PodSpecSchema = podSpec(z.array(ContainerSchema).min(1, 'a pod template needs at least one container'));

export const PodTemplateSchema = z.object({
  metadata: TemplateMetadataSchema.optional(),
  spec: PodSpecSchema,
});

/**
 * Kthena's own examples carry `workerTemplate: {spec: {containers: []}}` next to `workerReplicas: 0`,
 * so an empty worker template is accepted; it must have containers once there are workers.
 */
export const WorkerPodTemplateSchema = z.object({
  metadata: TemplateMetadataSchema.optional(),
  spec: podSpec(z.array(ContainerSchema)),
});

export const RoleSchema = z
  .object({
    name: z
      .string()
      .max(12, 'a role name has at most 12 characters')
      .regex(
        DNS1035_LABEL,
        'a role name must be a DNS-1035 label: lowercase letters, digits and "-", starting with a letter and ending with a letter or digit',
      )
      .describe('Name of the role, unique within the ServingGroup.'),
    replicas: z.int32().min(0).default(1).describe('Number of instances of this role in each ServingGroup.'),
    entryTemplate: PodTemplateSchema.describe('Template of the entry pod of each role instance.'),
    workerReplicas: z.int32().min(0).describe('Number of worker pods per role instance (besides the entry pod).'),
    workerTemplate: WorkerPodTemplateSchema.optional().describe('Template of the worker pods; required when workerReplicas > 0.'),
    maxUnavailable: intOrPercent(
      'RoleRollingUpdate only: how many instances of this role may be unavailable during an update (integer or percentage of role replicas, rounded down).',
    ).default(1),
    maxSurge: intOrPercent(
      'RoleRollingUpdate only: how many instances of this role may be created above its replicas during an update (integer or percentage of role replicas, rounded up; default 0). With a surge, maxUnavailable may be 0.',
    ).optional(),
    partition: intOrPercent(
      'RoleRollingUpdate only: instances with an index below this value keep their revision (integer or percentage of role replicas, rounded up).',
    ).optional(),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        // Kubernetes' PodSpec schema requires `containers` but allows it empty; a pod needs one.
        rule: 'size(self.entryTemplate.spec.containers) > 0',
        message: 'entryTemplate.spec.containers needs at least one container',
      },
      {
        rule: 'self.workerReplicas == 0 || (has(self.workerTemplate) && size(self.workerTemplate.spec.containers) > 0)',
        message: 'a workerTemplate with containers is required when workerReplicas is greater than 0',
      },
    ],
  });

const NetworkTopologySpecSchema = z.object({
  mode: z.enum(['hard', 'soft']).default('hard'),
  highestTierAllowed: z.int().min(0).optional(),
  highestTierName: z.string().max(253).optional(),
});

export const GangPolicySchema = z.object({
  minRoleReplicas: z
    .record(z.string(), z.int32())
    .optional()
    .describe('Minimum instances per role that must be schedulable together; immutable once set.')
    .meta({
      maxProperties: 4,
      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'minRoleReplicas cannot be changed once set' }],
    }),
});

export const ServingGroupTemplateSchema = z
  .object({
    restartGracePeriodSeconds: z
      .int()
      .default(0)
      .meta({ format: 'int64' })
      .describe('How long a failed or restarted pod may try to recover before its recovery policy applies.'),
    gangPolicy: GangPolicySchema.optional(),
    networkTopology: z
      .object({
        groupPolicy: NetworkTopologySpecSchema.optional(),
        rolePolicy: NetworkTopologySpecSchema.optional(),
      })
      .optional(),
    roles: z
      .array(RoleSchema)
      .min(1, 'at least one role is required')
      .max(4, 'at most 4 roles are allowed')
      .meta({
        'x-kubernetes-validations': [
          {
            rule: 'self.all(a, self.filter(b, b.name == a.name).size() == 1)',
            message: 'role names must be unique',
          },
        ],
      }),
  })
  .meta({
    'x-kubernetes-validations': [
      { rule: '!has(oldSelf.gangPolicy) || has(self.gangPolicy)', message: 'gangPolicy cannot be removed once set' },
    ],
  });

export const RecoveryPolicySchema = z.enum(['ServingGroupRecreate', 'RoleRecreate', 'None']);
export type RecoveryPolicy = z.infer<typeof RecoveryPolicySchema>;

export const RolloutStrategyTypeSchema = z.enum(['ServingGroupRollingUpdate', 'RoleRollingUpdate']);
export type RolloutStrategyType = z.infer<typeof RolloutStrategyTypeSchema>;

export const RollingUpdateConfigurationSchema = z
  .object({
    maxUnavailable: intOrPercent(
      'How many ServingGroups may be unavailable during an update (integer or percentage of replicas, rounded down).',
    ).default(1),
    maxSurge: intOrPercent(
      'How many ServingGroups may be created above replicas during an update (integer or percentage of replicas, rounded up; default 0). With a surge, maxUnavailable may be 0.',
    ).optional(),
    partition: intOrPercent(
      'ServingGroups with an ordinal below this value keep their revision (integer or percentage of replicas, rounded up).',
    ).optional(),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: `${nonZero('self.maxUnavailable')} || (has(self.maxSurge) && ${nonZero('self.maxSurge')})`,
        message: 'maxUnavailable cannot be 0 unless maxSurge is greater than 0',
      },
    ],
  });

export const RolloutStrategySchema = z
  .object({
    type: RolloutStrategyTypeSchema.default('ServingGroupRollingUpdate'),
    rollingUpdateConfiguration: RollingUpdateConfigurationSchema.optional(),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: "self.type != 'RoleRollingUpdate' || !has(self.rollingUpdateConfiguration)",
        message:
          'rollingUpdateConfiguration applies only to ServingGroupRollingUpdate; with RoleRollingUpdate set maxUnavailable and partition on each role',
      },
    ],
  });

/** Kthena's built-in plugins that Ripple runs (functions/reconcile-modelserving/plan/plugins.ts). */
export const BUILT_IN_PLUGINS = ['lws-standard-labels'] as const;

export const PluginSchema = z.object({
  name: z.string().min(1),
  type: z.enum(['BuiltIn']).default('BuiltIn'),
  config: z.unknown().optional().describe('Opaque configuration of the plugin.'),
  scope: z
    .object({
      roles: z.array(z.string()).optional(),
      target: z.enum(['All', 'Entry', 'Worker']).optional(),
    })
    .optional(),
});

const ROLE_ROLLING = "has(self.rolloutStrategy) && self.rolloutStrategy.type == 'RoleRollingUpdate'";

export const ModelServingSpecSchema = z
  .object({
    replicas: z.int32().min(0).default(1).describe('Number of ServingGroups.'),
    // No default on purpose. Kthena defaults this to "volcano", so on a cluster without Volcano every
    // pod stays Pending forever. Ripple resolves an empty value when it builds pods: "volcano" when the
    // PodGroup CRD is installed (Kthena's behaviour, gang scheduling included), otherwise the cluster's
    // default scheduler. See docs/modelserving.md ("schedulerName").
    schedulerName: z
      .string()
      .optional()
      .describe(
        'Scheduler for every pod. Empty: "volcano" when Volcano is installed, otherwise the default scheduler.',
      ),
    plugins: z.array(PluginSchema).optional(),
    template: ServingGroupTemplateSchema,
    rolloutStrategy: RolloutStrategySchema.optional(),
    recoveryPolicy: RecoveryPolicySchema.default('RoleRecreate'),
    revisionHistoryLimit: z
      .int32()
      .min(0)
      .default(10)
      .describe(
        'How many old revisions (ControllerRevisions no pod uses and that are neither current nor update) are kept for rollback; older ones are pruned. Default 10.',
      ),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: `!(self.recoveryPolicy == 'ServingGroupRecreate' && ${ROLE_ROLLING})`,
        message:
          'recoveryPolicy ServingGroupRecreate cannot be combined with rolloutStrategy.type RoleRollingUpdate; use RoleRecreate or ServingGroupRollingUpdate',
      },
      {
        rule: `(${ROLE_ROLLING}) || self.template.roles.all(r, !has(r.partition))`,
        message: 'a role partition applies only when rolloutStrategy.type is RoleRollingUpdate',
      },
      {
        rule:
          `!(${ROLE_ROLLING}) || self.template.roles.all(r, !has(r.maxUnavailable) || r.replicas == 0 || ` +
          `type(r.maxUnavailable) == string || (r.maxUnavailable <= r.replicas && ` +
          `(r.maxUnavailable >= 1 || (has(r.maxSurge) && ${nonZero('r.maxSurge')}))))`,
        message: "a role's maxUnavailable must be between 1 (0 with a maxSurge) and the role's replicas",
      },
      {
        rule: `(${ROLE_ROLLING}) || self.template.roles.all(r, !has(r.maxSurge))`,
        message: 'a role maxSurge applies only when rolloutStrategy.type is RoleRollingUpdate',
      },
    ],
  });

export const ConditionSchema = z.object({
  type: z.string().max(316),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.int().min(0).optional().meta({ format: 'int64' }),
  lastTransitionTime: z.string().meta({ format: 'date-time' }),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof ConditionSchema>;

/** One role across every ServingGroup, for `kubectl get -o yaml` (Kthena #603/#630: which roles are not up). */
export const RoleStatusSummarySchema = z.object({
  name: z.string().describe('The role name.'),
  replicas: z.int32().describe('Instances of this role that exist and are not being deleted, summed over ServingGroups.'),
  readyReplicas: z.int32().describe('Of those, instances whose pods are all Running and Ready.'),
  updatedReplicas: z.int32().describe("Of those, instances built from the spec's current template of this role."),
  templateHash: z
    .string()
    .optional()
    .describe("The modelserving.volcano.sh/role-template-hash of the spec's template of this role (absent for a role no longer in the spec)."),
  notReady: z
    .array(z.string())
    .max(10)
    .optional()
    .describe('Up to 10 instances that are not ready, as <ServingGroup>/<role-id>, lowest first.'),
});
export type RoleStatusSummary = z.infer<typeof RoleStatusSummarySchema>;

export const ModelServingStatusSchema = z.object({
  // Ripple's unified status (seed 002) beside Kthena's fields; without it in the CRD the API server prunes it.
  phase: PhaseSchema.optional().describe('Summary of the conditions: Pending, Starting, Ready, Degraded, Failed or NotAvailable.'),
  observedGeneration: z.int().optional().meta({ format: 'int64' }),
  replicas: z.int32().optional().describe('ServingGroups that exist (updated or not, ready or not, including deleting ones).'),
  currentReplicas: z
    .int32()
    .optional()
    .describe('ServingGroups (not being deleted) on currentRevision; equals updatedReplicas once the update revision is current.'),
  updatedReplicas: z.int32().optional().describe('ServingGroups on the update revision (ready or not).'),
  availableReplicas: z.int32().optional().describe('ServingGroups whose pods are all running and ready.'),
  currentRevision: z.string().optional(),
  updateRevision: z.string().optional(),
  collisionCount: z
    .int32()
    .optional()
    .describe(
      'Bumped when the name of the update revision\'s ControllerRevision is already taken by different data (a hash collision); it is mixed into the revision hash, as in a StatefulSet.',
    ),
  conditions: z.array(ConditionSchema).optional(),
  labelSelector: z.string().optional().describe('Selects exactly one pod per ServingGroup (for the scale subresource).'),
  roles: z
    .array(RoleStatusSummarySchema)
    .optional()
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })
    .describe('Each role summed over the ServingGroups: instances, ready, updated.'),
  lastProgressTime: z
    .string()
    .optional()
    .meta({ format: 'date-time' })
    .describe(
      'While the spec is being rolled out or scaled: when it last made progress. The progress deadline (annotation ripple.dev/progress-deadline-seconds, default 600) counts from it.',
    ),
});

export const ObjectMetaSchema = z.looseObject({
  name: z.string().min(1),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  generation: z.int().optional(),
  resourceVersion: z.string().optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  deletionTimestamp: z.unknown().optional(),
});

export const ModelServingSchema = z
  .object({
    apiVersion: z.literal(MODEL_SERVING_API_VERSION),
    kind: z.literal(MODEL_SERVING_KIND),
    metadata: ObjectMetaSchema,
    spec: ModelServingSpecSchema,
    status: ModelServingStatusSchema.optional(),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        // Every child name starts with the ModelServing's name and headless Service names must be
        // DNS-1035 labels, so a name with dots or a leading digit can never work.
        rule: "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
        message: 'the name must be a DNS-1035 label (lowercase letters, digits and "-", starting with a letter)',
      },
    ],
  });

export type ModelServing = z.infer<typeof ModelServingSchema>;
export type ModelServingSpec = z.infer<typeof ModelServingSpecSchema>;
export type ModelServingStatus = z.infer<typeof ModelServingStatusSchema>;
export type ServingGroupTemplate = z.infer<typeof ServingGroupTemplateSchema>;
export type Role = z.infer<typeof RoleSchema>;
export type PodTemplate = z.infer<typeof PodTemplateSchema> | z.infer<typeof WorkerPodTemplateSchema>;
export type RollingUpdateConfiguration = z.infer<typeof RollingUpdateConfigurationSchema>;
export type RolloutStrategy = z.infer<typeof RolloutStrategySchema>;
export type Plugin = z.infer<typeof PluginSchema>;

export type ParseResult = { ok: true; value: ModelServing } | { ok: false; errors: string[] };

/**
 * How long a rollout or scale may go without progress before status says it is stuck (Kubernetes'
 * Deployment `progressDeadlineSeconds`). An annotation, not a spec field: Kthena's `rolloutStrategy` has
 * no such field, and Ripple keeps the spec Kthena's so manifests stay portable both ways.
 */
export const PROGRESS_DEADLINE_ANNOTATION = 'ripple.dev/progress-deadline-seconds';
/** Kubernetes' default for a Deployment. */
export const DEFAULT_PROGRESS_DEADLINE_SECONDS = 600;
const INT32_MAX = 2_147_483_647;

/** The annotation's value in seconds, or a `<field>: <what to fix>` problem. */
export function progressDeadlineOf(annotations: Record<string, string> | undefined): { seconds: number } | { problem: string } {
  const raw = annotations?.[PROGRESS_DEADLINE_ANNOTATION];
  if (raw === undefined) return { seconds: DEFAULT_PROGRESS_DEADLINE_SECONDS };
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > INT32_MAX) {
    return {
      problem: `metadata.annotations["${PROGRESS_DEADLINE_ANNOTATION}"]: "${raw}" must be a whole number of seconds from 1 to ${INT32_MAX}, e.g. "${DEFAULT_PROGRESS_DEADLINE_SECONDS}"`,
    };
  }
  return { seconds: n };
}

/**
 * Parses an object read from the API server (or a manifest) and applies Kthena's defaults.
 * On failure, each error is `<field path>: <what to fix>`, ready for a `ConfigValid=False` message.
 */
export function parseModelServing(obj: unknown): ParseResult {
  const parsed = ModelServingSchema.safeParse(obj);
  if (!parsed.success) {
    return { ok: false, errors: parsed.error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`) };
  }
  const errors = semanticErrors(parsed.data);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: parsed.data };
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out === '' ? '<root>' : out;
}

/** Resolves an IntOrString against a total: Kubernetes' scaled-value rule, `roundUp` for percentages. */
export function resolveIntOrPercent(value: IntOrString, total: number, roundUp: boolean): number | undefined {
  if (typeof value === 'number') return value;
  const m = /^(\d+)%$/.exec(value);
  if (!m) return undefined;
  const scaled = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(scaled) : Math.floor(scaled);
}

function intOrPercentError(value: IntOrString | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return value < 0 ? 'must be a non-negative integer' : undefined;
  return PERCENT.test(value) ? undefined : `"${value}" must be a non-negative integer or a percentage from 0% to 100%`;
}

/**
 * The admission webhook's rules that are not structural, plus what Ripple needs to run the spec.
 * All of them are also enforced here because the CRD's CEL may be missing (older CRD) and because
 * some cannot live in CEL: they depend on `spec.replicas`, which the scale subresource (HPA/KEDA)
 * changes without going through an admission webhook.
 */
/** Label values and Service names (DNS-1035 labels): Kubernetes' limit. */
const KUBE_NAME_MAX = 63;

export function semanticErrors(ms: ModelServing): string[] {
  const errors: string[] = [];
  const spec = ms.spec;
  const roles = spec.template.roles;
  const roleRolling = spec.rolloutStrategy?.type === 'RoleRollingUpdate';

  const deadline = progressDeadlineOf(ms.metadata.annotations);
  if ('problem' in deadline) errors.push(deadline.problem);
  if (!DNS1035_LABEL.test(ms.metadata.name)) {
    errors.push(
      `metadata.name: "${ms.metadata.name}" must be a DNS-1035 label (lowercase letters, digits and "-", starting with a letter) because it prefixes every pod and Service name`,
    );
  }
  // Kubernetes limits label values and Service names to 63 characters. Only what does not depend on
  // spec.replicas is checked here (ordinal 0): the scale subresource (an HPA) changes spec.replicas
  // without admission, so the planner refuses only the ordinals whose names do not fit, on status.
  if (ms.metadata.name.length > KUBE_NAME_MAX) {
    errors.push(`metadata.name: ${ms.metadata.name.length} characters; at most ${KUBE_NAME_MAX} because it is the value of the modelserving.volcano.sh/name label on every pod`);
  } else {
    for (const [i, role] of roles.entries()) {
      if (!role.workerTemplate || role.replicas <= 0) continue;
      const svc = `${ms.metadata.name}-0-${role.name}-${role.replicas - 1}-0`;
      if (svc.length > KUBE_NAME_MAX) {
        errors.push(
          `spec.template.roles[${i}]: the headless Service "${svc}" of role "${role.name}" would be ${svc.length} characters, over the ${KUBE_NAME_MAX} Kubernetes allows; shorten the ModelServing or role name, or lower the role's replicas`,
        );
      }
    }
  }

  const seen = new Set<string>();
  for (const [i, role] of roles.entries()) {
    const at = `spec.template.roles[${i}]`;
    if (seen.has(role.name)) errors.push(`${at}.name: role name "${role.name}" is used more than once`);
    seen.add(role.name);
    if (role.workerReplicas > 0 && !role.workerTemplate) {
      errors.push(`${at}.workerTemplate: required because workerReplicas is ${role.workerReplicas}`);
    } else if (role.workerReplicas > 0 && role.workerTemplate?.spec.containers.length === 0) {
      errors.push(`${at}.workerTemplate.spec.containers: needs at least one container because workerReplicas is ${role.workerReplicas}`);
    }
    for (const [which, tpl] of [
      ['entryTemplate', role.entryTemplate],
      ['workerTemplate', role.workerTemplate],
    ] as const) {
      if (!tpl) continue;
      const names = new Set<string>();
      for (const [j, c] of [...tpl.spec.containers, ...(tpl.spec.initContainers ?? [])].entries()) {
        if (names.has(c.name)) errors.push(`${at}.${which}.spec: container name "${c.name}" is used more than once`);
        names.add(c.name);
        if (j < tpl.spec.containers.length && !c.image) {
          errors.push(`${at}.${which}.spec.containers[${j}].image: an image is required`);
        }
      }
    }
    const surgeErr = intOrPercentError(role.maxSurge);
    if (surgeErr) errors.push(`${at}.maxSurge: ${surgeErr}`);
    if (role.maxSurge !== undefined && !roleRolling) {
      errors.push(`${at}.maxSurge: applies only when spec.rolloutStrategy.type is RoleRollingUpdate; remove it or change the type`);
    }
    const partitionErr = intOrPercentError(role.partition);
    if (partitionErr) errors.push(`${at}.partition: ${partitionErr}`);
    if (role.partition !== undefined && !roleRolling) {
      errors.push(`${at}.partition: applies only when spec.rolloutStrategy.type is RoleRollingUpdate; remove it or change the type`);
    }
    if (roleRolling) {
      const muErr = intOrPercentError(role.maxUnavailable);
      if (muErr) errors.push(`${at}.maxUnavailable: ${muErr}`);
      // A role scaled to 0 has nothing to update, so its (defaulted) maxUnavailable is not checked
      // against it: Kthena rejects `replicas: 0` with the default maxUnavailable=1 (kthena#1749).
      else if (role.replicas > 0) {
        const mu = resolveIntOrPercent(role.maxUnavailable, role.replicas, false) ?? 0;
        const surge = role.maxSurge === undefined ? 0 : (resolveIntOrPercent(role.maxSurge, role.replicas, true) ?? 0);
        if (mu === 0 && surge === 0) {
          errors.push(`${at}.maxUnavailable: resolves to 0 for ${role.replicas} replicas and maxSurge is 0; use at least 1, or set a maxSurge`);
        }
        else if (mu > role.replicas) {
          errors.push(`${at}.maxUnavailable: ${mu} is greater than the role's replicas (${role.replicas})`);
        }
      }
    }
  }

  // Kthena refuses to build its plugin chain for a name it has not registered; so does Ripple, on status.
  for (const [i, plugin] of (spec.plugins ?? []).entries()) {
    if (!(BUILT_IN_PLUGINS as readonly string[]).includes(plugin.name)) {
      errors.push(`spec.plugins[${i}].name: unknown plugin "${plugin.name}"; the built-in plugins are: ${BUILT_IN_PLUGINS.join(', ')}`);
    }
  }

  const ru = spec.rolloutStrategy?.rollingUpdateConfiguration;
  if (ru) {
    const at = 'spec.rolloutStrategy.rollingUpdateConfiguration';
    if (roleRolling) {
      errors.push(`${at}: applies only to ServingGroupRollingUpdate; with RoleRollingUpdate set maxUnavailable and partition on each role`);
    }
    const muErr = intOrPercentError(ru.maxUnavailable);
    if (muErr) errors.push(`${at}.maxUnavailable: ${muErr}`);
    else if ((ru.maxUnavailable === 0 || ru.maxUnavailable === '0%') && (ru.maxSurge === undefined || ru.maxSurge === 0 || ru.maxSurge === '0%')) {
      errors.push(`${at}.maxUnavailable: cannot be 0 unless maxSurge is greater than 0`);
    }
    const sErr = intOrPercentError(ru.maxSurge);
    if (sErr) errors.push(`${at}.maxSurge: ${sErr}`);
    const pErr = intOrPercentError(ru.partition);
    if (pErr) errors.push(`${at}.partition: ${pErr}`);
  }

  if (spec.recoveryPolicy === 'ServingGroupRecreate' && roleRolling) {
    errors.push(
      'spec.rolloutStrategy.type: RoleRollingUpdate cannot be combined with recoveryPolicy ServingGroupRecreate; use (ServingGroupRecreate, ServingGroupRollingUpdate) or (RoleRecreate, RoleRollingUpdate)',
    );
  }

  const minRole = spec.template.gangPolicy?.minRoleReplicas;
  if (minRole) {
    for (const [name, min] of Object.entries(minRole)) {
      const at = `spec.template.gangPolicy.minRoleReplicas.${name}`;
      const role = roles.find((r) => r.name === name);
      if (!role) errors.push(`${at}: there is no role named "${name}" in spec.template.roles`);
      else if (min > role.replicas) errors.push(`${at}: ${min} is more than the role's replicas (${role.replicas})`);
      if (min < 0) errors.push(`${at}: must be non-negative`);
    }
  }
  return errors;
}

/** The CRD generated into `infra/crds/modelserving.yaml` (see `api/generate-crds.ts`). */
export const MODEL_SERVING_CRD: CrdOptions = {
  group: MODEL_SERVING_GROUP,
  kind: MODEL_SERVING_KIND,
  plural: MODEL_SERVING_PLURAL,
  singular: 'modelserving',
  scope: 'Namespaced',
  versions: [
    {
      name: MODEL_SERVING_VERSION,
      schema: ModelServingSchema,
      storage: true,
      subresources: {
        status: true,
        scale: {
          specReplicasPath: '.spec.replicas',
          statusReplicasPath: '.status.replicas',
          labelSelectorPath: '.status.labelSelector',
        },
      },
      additionalPrinterColumns: [
        { name: 'Replicas', type: 'integer', jsonPath: '.status.replicas', description: 'Total number of serving groups' },
        { name: 'Available', type: 'integer', jsonPath: '.status.availableReplicas', description: 'Number of serving groups that are ready' },
        {
          name: 'Updated',
          type: 'integer',
          jsonPath: '.status.updatedReplicas',
          description: 'Number of serving groups updated to the latest revision',
        },
        // Ripple's unified status (seed 002): what `kubectl get` users ask for (kthena has no such column).
        { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Summary of the conditions (Pending, Starting, Ready, Degraded, Failed)' },
        { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', description: 'The Ready condition' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    },
  ],
};
