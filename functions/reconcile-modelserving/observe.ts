/**
 * Reads what a reconcile plans from, fresh from the API server: the ModelServing, its pods, Services,
 * ControllerRevisions and PodGroups (by the `modelserving.volcano.sh/name` label, in its namespace),
 * and whether Volcano is installed. Plain JSON through kube/raw.ts, checked with zod at this boundary
 * (lightly for the built-in kinds, see `itemsSchema`).
 */
import { PDB_RESOURCE, type DisruptionBudgetObject } from './plan/disruption.js';
import type { V1ControllerRevision, V1Pod, V1Service } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { RedisClient } from '../../queue/connection.js';
import { z } from 'zod';
import { parseJson } from '../../kube/json.js';
import { ownerReferenceSchema } from '../../kube/object.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../../kube/resources.js';
import type { ClusterCapabilities, PodGroupObject } from './plan/gang.js';
import { LABEL_NAME } from './plan/names.js';

/** The ModelServing as stored, or undefined when it is gone. Parsed by the caller (`parseModelServing`). */
export async function readModelServing(kc: KubeConfig, namespace: string, name: string): Promise<unknown> {
  try {
    return await kubeRequest(kc, objectPath(Resources.modelServing, namespace, name));
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

export interface Children {
  pods: V1Pod[];
  services: V1Service[];
  controllerRevisions: V1ControllerRevision[];
  podGroups?: PodGroupObject[];
  /** The resourceVersion each list was answered at (lists only), so the children cache knows what a list saw. */
  listedAt?: { pods?: string; services?: string; controllerrevisions?: string };
}

const podGroupSchema = z.object({
  apiVersion: z.literal('scheduling.volcano.sh/v1beta1').default('scheduling.volcano.sh/v1beta1'),
  kind: z.literal('PodGroup').default('PodGroup'),
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    ownerReferences: z.array(ownerReferenceSchema).optional(),
  }),
  spec: z.looseObject({
    minMember: z.number().default(0),
    minResources: z.record(z.string(), z.string()).optional(),
    queue: z.string().optional(),
    networkTopology: z.record(z.string(), z.unknown()).optional(),
    subGroupPolicy: z.array(z.record(z.string(), z.unknown())).optional(),
  }),
});
const podGroupListSchema = z.object({ items: z.array(podGroupSchema) });

/**
 * A list answer's items, checked only for what makes them objects: the planner reads the fields it
 * needs defensively (`podFacts`, `indexRevisions`). Parsing every field of every child with zod (or
 * client-node's typed deserializer, which also builds a Date per timestamp) each reconcile was a
 * measurable share of a converge's CPU (bench/README.md, "ModelServing converge"); timestamps stay
 * strings, which `toMillis` reads.
 */
const itemsSchema = z.object({
  metadata: z.object({ resourceVersion: z.string().optional() }).optional(),
  items: z.array(z.looseObject({ metadata: z.looseObject({ name: z.string() }) })),
});

async function listOf<T>(kc: KubeConfig, path: string, labelSelector: string): Promise<{ items: T[]; resourceVersion: string | undefined }> {
  // Plain JSON through kube/raw.ts: its pooled keep-alive connections, no per-request TLS handshake.
  const list = itemsSchema.parse(await kubeRequest(kc, path, { query: { labelSelector } }));
  return { items: list.items as T[], resourceVersion: list.metadata?.resourceVersion };
}

const disruptionBudgetListSchema = z.object({
  items: z.array(
    z.object({
      metadata: z.looseObject({ name: z.string(), uid: z.string().optional(), resourceVersion: z.string().optional(), ownerReferences: z.array(z.looseObject({ apiVersion: z.string(), kind: z.string(), name: z.string(), uid: z.string(), controller: z.boolean().optional() })).optional() }),
      spec: z.looseObject({ maxUnavailable: z.union([z.number(), z.string()]).optional() }).optional(),
    }),
  ),
});

/** The ModelServing's PodDisruptionBudgets (eviction protection, plan/disruption.ts); listed only when the annotation is set. */
export async function listDisruptionBudgets(kc: KubeConfig, namespace: string, msName: string): Promise<DisruptionBudgetObject[]> {
  const raw = await kubeRequest(kc, collectionPath(PDB_RESOURCE, namespace), { query: { labelSelector: `${LABEL_NAME}=${msName}` } });
  return disruptionBudgetListSchema.parse(raw).items;
}

export async function listChildren(kc: KubeConfig, namespace: string, msName: string, volcano: boolean): Promise<Children> {
  const labelSelector = `${LABEL_NAME}=${msName}`;
  const [pods, services, controllerRevisions, podGroups] = await Promise.all([
    listOf<V1Pod>(kc, collectionPath(Resources.pod, namespace), labelSelector),
    listOf<V1Service>(kc, collectionPath(Resources.service, namespace), labelSelector),
    listOf<V1ControllerRevision>(kc, collectionPath(Resources.controllerRevision, namespace), labelSelector),
    volcano
      ? kubeRequest(kc, collectionPath(Resources.podGroup, namespace), { query: { labelSelector } }).then((raw) => podGroupListSchema.parse(raw).items)
      : Promise.resolve(undefined),
  ]);
  const listedAt: NonNullable<Children['listedAt']> = {};
  if (pods.resourceVersion) listedAt.pods = pods.resourceVersion;
  if (services.resourceVersion) listedAt.services = services.resourceVersion;
  if (controllerRevisions.resourceVersion) listedAt.controllerrevisions = controllerRevisions.resourceVersion;
  return { pods: pods.items, services: services.items, controllerRevisions: controllerRevisions.items, ...(podGroups ? { podGroups } : {}), listedAt };
}

const discoverySchema = z.object({ resources: z.array(z.object({ name: z.string() }).passthrough()) });
const crdSchema = z.object({
  spec: z.object({
    versions: z.array(
      z.object({
        name: z.string(),
        schema: z
          .object({
            openAPIV3Schema: z
              .object({ properties: z.record(z.string(), z.looseObject({ properties: z.record(z.string(), z.unknown()).optional() })).optional() })
              .passthrough()
              .optional(),
          })
          .optional(),
      }),
    ),
  }),
});
const capabilitiesSchema = z.object({ volcanoPodGroups: z.boolean(), volcanoSubGroupPolicy: z.boolean().optional() });

/** How long a worker trusts what it learnt about the cluster's Volcano installation. */
const CAPABILITIES_TTL_SECONDS = 30;

async function discoverCapabilities(kc: KubeConfig): Promise<ClusterCapabilities> {
  const { group, version } = Resources.podGroup;
  let served = false;
  try {
    // Discovery is readable by every authenticated user, unlike CRDs.
    const doc = discoverySchema.parse(await kubeRequest(kc, `/apis/${group}/${version}`));
    served = doc.resources.some((r) => r.name === Resources.podGroup.plural);
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
  if (!served) return { volcanoPodGroups: false };
  let subGroups = false;
  try {
    const crd = crdSchema.parse(await kubeRequest(kc, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.${group}`));
    const schema = crd.spec.versions.find((v) => v.name === version)?.schema?.openAPIV3Schema;
    subGroups = schema?.properties?.spec?.properties?.subGroupPolicy !== undefined;
  } catch (err) {
    // Without RBAC on CRDs, fall back to Kthena's older PodGroup shape (no per-role gangs).
    if (!isStatus(err, 403) && !isStatus(err, 404)) throw err;
  }
  return { volcanoPodGroups: true, volcanoSubGroupPolicy: subGroups };
}

/**
 * Whether Volcano's PodGroup CRD is installed. Asked of the API server at most every 30 s across all
 * workers (cached in Redis, not in the process: workers keep no state of their own), so installing
 * Volcano is noticed within that time without costing a discovery call per reconcile.
 */
export async function clusterCapabilities(kc: KubeConfig, redis: RedisClient, prefix: string): Promise<ClusterCapabilities> {
  const key = `${prefix}:modelserving:cluster`;
  const cached = await redis.get(key);
  if (cached) {
    // Unreadable: ask again.
    const parsed = capabilitiesSchema.safeParse(parseJson(cached));
    if (parsed.success) return parsed.data;
  }
  const fresh = await discoverCapabilities(kc);
  await redis.set(key, JSON.stringify(fresh), 'EX', CAPABILITIES_TTL_SECONDS);
  return fresh;
}
