/**
 * VariantAutoscaling (`llmd.ai/v1alpha1`): the custom resource of llm-d's workload-variant-autoscaler,
 * kept field-for-field compatible so existing manifests, HPAs and KEDA objects keep working.
 *
 * Everything the CRD generator needs is `VARIANT_AUTOSCALING_CRD` (schema, names, short name `va`,
 * printer columns, status subresource), so adding this resource to it is one line.
 */
import { z } from 'zod';
import { PhaseSchema } from '../status/schema.js';
import type { CrdOptions, PrinterColumn } from './crd.js';

export const VA_GROUP = 'llmd.ai';
export const VA_VERSION = 'v1alpha1';
export const VA_API_VERSION = `${VA_GROUP}/${VA_VERSION}` as const;
export const VA_KIND = 'VariantAutoscaling';
export const VA_LIST_KIND = 'VariantAutoscalingList';
export const VA_PLURAL = 'variantautoscalings';
export const VA_SINGULAR = 'variantautoscaling';
export const VA_SHORT_NAMES = ['va'] as const;

/** Labels read from a VA. */
export const ACCELERATOR_NAME_LABEL = 'inference.optimization/acceleratorName';
export const CONTROLLER_INSTANCE_LABEL = 'wva.llmd.ai/controller-instance';

/** Cost per replica used when `spec.variantCost` is absent (the CRD default) or cannot be read. */
export const DEFAULT_VARIANT_COST = 10;
export const DEFAULT_VARIANT_COST_TEXT = '10.0';

export const ConditionType = {
  TargetResolved: 'TargetResolved',
  MetricsAvailable: 'MetricsAvailable',
  OptimizationReady: 'OptimizationReady',
} as const;
export type ConditionTypeName = (typeof ConditionType)[keyof typeof ConditionType];

/** Reasons per condition type, as the upstream API defines them. */
export const TargetResolvedReason = { TargetFound: 'TargetFound', TargetNotFound: 'TargetNotFound' } as const;
export const MetricsAvailableReason = {
  MetricsFound: 'MetricsFound',
  MetricsMissing: 'MetricsMissing',
  MetricsStale: 'MetricsStale',
  PrometheusError: 'PrometheusError',
} as const;
export const OptimizationReadyReason = {
  OptimizationSucceeded: 'OptimizationSucceeded',
  OptimizationFailed: 'OptimizationFailed',
  MetricsUnavailable: 'MetricsUnavailable',
  InvalidConfiguration: 'InvalidConfiguration',
  SkippedProcessing: 'SkippedProcessing',
} as const;

const DECIMAL = /^\d+(\.\d+)?$/;
// The same patterns apiextensions uses for metav1.Condition.
const CONDITION_TYPE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
const CONDITION_REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

// Checked in zod, declared as `format: date-time` in the CRD (as upstream) without zod's long regex.
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const rfc3339 = (what: string) =>
  z
    .string({ error: `${what} must be an RFC 3339 date-time such as 2026-01-29T12:00:00Z` })
    .refine((s) => RFC3339.test(s) && !Number.isNaN(Date.parse(s)), { error: `${what} must be an RFC 3339 date-time such as 2026-01-29T12:00:00Z` })
    .meta({ format: 'date-time' });

export const crossVersionObjectReferenceSchema = z
  .object({
    apiVersion: z.string({ error: 'apiVersion must be a string such as "apps/v1"' }).optional().describe('API version of the referent.'),
    kind: z
      .string({ error: 'kind is required: the kind of the resource to scale, e.g. "Deployment"' })
      .describe('Kind of the referent, e.g. Deployment.'),
    name: z
      .string({ error: 'name is required: the name of the Deployment to scale, in the VariantAutoscaling\'s namespace' })
      .describe('Name of the referent, in the same namespace.'),
  })
  .describe('The resource whose replicas this VariantAutoscaling drives, as in a HorizontalPodAutoscaler.')
  .meta({ 'x-kubernetes-map-type': 'atomic' });

export const variantAutoscalingSpecSchema = z
  .object({
    scaleTargetRef: crossVersionObjectReferenceSchema,
    modelID: z
      .string({ error: 'modelID is required: the model name the server reports in its metrics (e.g. "meta/llama-3.1-8b")' })
      .min(1, { error: 'modelID must not be empty: set it to the model name the server reports (e.g. "meta/llama-3.1-8b")' })
      .describe('Model identifier (the OpenAI-API model name); variants with the same modelID and namespace are scaled together.'),
    variantCost: z
      .string({ error: 'variantCost must be a quoted decimal string such as "10.0"' })
      .regex(DECIMAL, { error: 'variantCost must be a non-negative decimal written as a string, such as "10" or "42.5"' })
      .default(DEFAULT_VARIANT_COST_TEXT)
      .describe('Cost of one replica of this variant; the cheapest variant is scaled up first and the most expensive down first.'),
  })
  .describe('What to autoscale and how it is priced.');

export const optimizedAllocSchema = z
  .object({
    lastRunTime: rfc3339('lastRunTime').optional().describe('When the optimizer last produced this allocation.'),
    accelerator: z
      .string({ error: 'accelerator is required' })
      .min(2, { error: 'accelerator must be at least 2 characters' })
      .describe('Accelerator type of the allocation.'),
    numReplicas: z
      .number({ error: 'numReplicas is required and must be a whole number' })
      .int({ error: 'numReplicas must be a whole number' })
      .min(0, { error: 'numReplicas must be 0 or more' })
      .describe('Replicas the optimizer wants for this variant.'),
  })
  .describe('The allocation the autoscaler wants; always written as a whole object.');

export const actuationStatusSchema = z.object({
  applied: z.boolean({ error: 'applied is required and must be true or false' }).describe('Whether the desired allocation was published for actuation.'),
});

/** Seed 003 shows the observed allocation on status; the upstream API no longer has it. */
export const currentAllocationSchema = z
  .object({
    numReplicas: z.number().int().min(0, { error: 'numReplicas must be 0 or more' }).describe('Replicas the target has now.'),
    accelerator: z.string().optional().describe('Accelerator type the replicas run on.'),
  })
  .describe('The observed allocation of the scale target (0 replicas when it is missing).');

export const conditionSchema = z.object({
  type: z
    .string({ error: 'type is required' })
    .max(316)
    .regex(CONDITION_TYPE, { error: 'type must be CamelCase, optionally prefixed by a DNS domain and /' }),
  status: z.enum(['True', 'False', 'Unknown'], { error: 'status must be "True", "False" or "Unknown"' }),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: rfc3339('lastTransitionTime'),
  reason: z
    .string({ error: 'reason is required' })
    .min(1, { error: 'reason must not be empty' })
    .max(1024)
    .regex(CONDITION_REASON, { error: 'reason must be CamelCase (letters, digits, _ , :)' }),
  message: z.string({ error: 'message is required (it may be empty)' }).max(32768),
});
export type Condition = z.infer<typeof conditionSchema>;

export const variantAutoscalingStatusSchema = z
  .object({
    // The unified status model (status/, seed 002) beside WVA's own fields.
    phase: PhaseSchema.optional().describe('Summary of the conditions: Pending, Starting, Ready, Degraded, Failed or NotAvailable.'),
    observedGeneration: z.int().min(0).optional().meta({ format: 'int64' }).describe('The metadata.generation this status was computed from.'),
    desiredOptimizedAlloc: optimizedAllocSchema.optional(),
    actuation: actuationStatusSchema.optional(),
    currentAllocation: currentAllocationSchema.optional(),
    conditions: z
      .array(conditionSchema)
      .superRefine((conditions, ctx) => {
        const seen = new Set<string>();
        conditions.forEach((c, i) => {
          if (seen.has(c.type)) {
            ctx.addIssue({ code: 'custom', path: [i, 'type'], message: `condition type ${c.type} appears more than once; keep one entry per type` });
          }
          seen.add(c.type);
        });
      })
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
      .optional(),
  })
  .describe('Observed state, written by the autoscaler.');

const stringMap = z.record(z.string(), z.string({ error: 'values must be strings (quote numbers and booleans)' }));

export const objectMetaSchema = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
});

export const variantAutoscalingSchema = z
  .object({
    apiVersion: z.literal(VA_API_VERSION, { error: `apiVersion must be "${VA_API_VERSION}"` }).optional(),
    kind: z.literal(VA_KIND, { error: `kind must be "${VA_KIND}"` }).optional(),
    metadata: objectMetaSchema,
    spec: variantAutoscalingSpecSchema,
    status: variantAutoscalingStatusSchema.optional(),
  })
  .describe('Autoscaling of one variant (one Deployment) of a model served by llm-d.');

export type VariantAutoscaling = z.infer<typeof variantAutoscalingSchema>;
export type VariantAutoscalingSpec = z.infer<typeof variantAutoscalingSpecSchema>;
export type VariantAutoscalingStatus = z.infer<typeof variantAutoscalingStatusSchema>;
export type OptimizedAlloc = z.infer<typeof optimizedAllocSchema>;
export type CurrentAllocation = z.infer<typeof currentAllocationSchema>;
/** What a manifest may say before defaults are applied. */
export type VariantAutoscalingInput = z.input<typeof variantAutoscalingSchema>;

export const variantAutoscalingPrinterColumns: PrinterColumn[] = [
  { name: 'Target', type: 'string', jsonPath: '.spec.scaleTargetRef.name' },
  { name: 'Model', type: 'string', jsonPath: '.spec.modelID' },
  { name: 'Optimized', type: 'string', jsonPath: '.status.desiredOptimizedAlloc.numReplicas' },
  { name: 'MetricsReady', type: 'string', jsonPath: ".status.conditions[?(@.type=='MetricsAvailable')].status" },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

/** For api/generate-crds.ts: `'variantautoscaling.yaml': [VARIANT_AUTOSCALING_CRD, 'api/variantautoscaling.ts']`. */
export const VARIANT_AUTOSCALING_CRD: CrdOptions = {
  group: VA_GROUP,
  kind: VA_KIND,
  listKind: VA_LIST_KIND,
  plural: VA_PLURAL,
  singular: VA_SINGULAR,
  shortNames: [...VA_SHORT_NAMES],
  scope: 'Namespaced',
  versions: [
    {
      name: VA_VERSION,
      schema: variantAutoscalingSchema,
      storage: true,
      subresources: { status: true },
      additionalPrinterColumns: variantAutoscalingPrinterColumns,
    },
  ],
};

export type ParseResult<T> = { ok: true; value: T } | { ok: false; errors: string[] };

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(object)' : out;
}

/** One line per problem, each starting with the field path, e.g. `spec.modelID: modelID must not be empty: …`. */
export function formatZodIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`);
}

/** Validate an object read from the API server or a manifest, applying the CRD's defaults. */
export function parseVariantAutoscaling(obj: unknown): ParseResult<VariantAutoscaling> {
  const result = variantAutoscalingSchema.safeParse(obj);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, errors: formatZodIssues(result.error) };
}

/** The variant's cost per replica; an unreadable value counts as the default rather than failing the model. */
export function variantCostOf(va: Pick<VariantAutoscaling, 'spec'>): number {
  const text = va.spec.variantCost;
  if (!DECIMAL.test(text)) return DEFAULT_VARIANT_COST;
  const cost = Number(text);
  return Number.isFinite(cost) ? cost : DEFAULT_VARIANT_COST;
}

export function vaKey(va: Pick<VariantAutoscaling, 'metadata'>): string {
  return `${va.metadata.namespace ?? ''}/${va.metadata.name ?? ''}`;
}
