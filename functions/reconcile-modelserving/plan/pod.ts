/**
 * The desired Pod of a role instance: entry pod (index 0) or worker (1..workerReplicas), built from
 * the template of the revision it belongs to, with Kthena's names, labels, env vars and a controller
 * owner reference to the ModelServing.
 */
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type { ModelServing, PodTemplate, Role } from '../../../api/modelserving.js';
import {
  ANNOTATION_VOLCANO_GROUP_NAME,
  ANNOTATION_VOLCANO_TASK_SPEC,
  ENV_ENTRY_ADDRESS,
  ENV_GROUP_SIZE,
  ENV_WORKER_INDEX,
  LABEL_ENTRY,
  LABEL_GROUP_NAME,
  LABEL_NAME,
  LABEL_REVISION,
  LABEL_ROLE,
  LABEL_ROLE_ID,
  LABEL_ROLE_TEMPLATE_HASH,
  entryPodName,
  parseOrdinal,
  podName,
  roleId,
} from './names.js';
import { runPodCreatePlugins } from './plugins.js';
import { controllerOwnerReference } from './owner.js';
import { roleTemplateHash } from './revision.js';

export interface RolePodContext {
  ms: ModelServing;
  groupName: string;
  /** The role's template as of `revision` (the spec's, or a ControllerRevision's). */
  role: Role;
  roleIndex: number;
  /** Value of the `modelserving.volcano.sh/revision` label. */
  revision: string;
  /** Scheduler for the pod; undefined leaves the template's own (usually the default scheduler). */
  schedulerName: string | undefined;
  /** Annotate the pod for its Volcano PodGroup. */
  gang: boolean;
}

/** Number of pods in one role instance: the entry pod plus its workers. */
export function podsPerInstance(role: Role): number {
  return 1 + role.workerReplicas;
}

/** Every pod of one role instance, entry first. */
export function desiredRolePods(ctx: RolePodContext): V1Pod[] {
  return Array.from({ length: podsPerInstance(ctx.role) }, (_, i) => desiredPod(ctx, i));
}

export function desiredPod(ctx: RolePodContext, podIndex: number): V1Pod {
  const { ms, groupName, role, roleIndex } = ctx;
  const namespace = ms.metadata.namespace;
  if (!namespace) throw new Error(`ModelServing ${ms.metadata.name} has no namespace`);
  const id = roleId(role.name, roleIndex);
  const entry = podIndex === 0;
  const template: PodTemplate | undefined = entry ? role.entryTemplate : role.workerTemplate;
  if (!template) throw new Error(`role ${role.name} has workers but no workerTemplate`);

  // Template labels first: the controller's own labels must win, or the pod would be lost to it.
  const labels: Record<string, string> = {
    ...(template.metadata?.labels ?? {}),
    [LABEL_NAME]: ms.metadata.name,
    [LABEL_GROUP_NAME]: groupName,
    [LABEL_ROLE]: role.name,
    [LABEL_ROLE_ID]: id,
    [LABEL_REVISION]: ctx.revision,
    [LABEL_ROLE_TEMPLATE_HASH]: roleTemplateHash(role),
  };
  if (entry) labels[LABEL_ENTRY] = 'true';
  else delete labels[LABEL_ENTRY];

  const annotations: Record<string, string> = { ...(template.metadata?.annotations ?? {}) };
  if (ctx.gang) {
    annotations[ANNOTATION_VOLCANO_GROUP_NAME] = groupName;
    annotations[ANNOTATION_VOLCANO_TASK_SPEC] = id;
  }

  const spec = structuredClone(template.spec) as Record<string, unknown> & { containers: ContainerLike[]; initContainers?: ContainerLike[] };
  if (ctx.schedulerName !== undefined) spec.schedulerName = ctx.schedulerName;
  const env = [
    { name: ENV_GROUP_SIZE, value: String(podsPerInstance(role)) },
    // The headless Service of the instance has the entry pod's name, so this resolves to the entry pod.
    { name: ENV_ENTRY_ADDRESS, value: `${entryPodName(groupName, id)}.${namespace}` },
    { name: ENV_WORKER_INDEX, value: String(podIndex) },
  ];
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
    const kept = (c.env ?? []).filter((e) => !env.some((x) => x.name === e.name));
    c.env = [...kept, ...env];
  }

  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(groupName, id, podIndex),
      namespace,
      labels,
      ...(Object.keys(annotations).length ? { annotations } : {}),
      ownerReferences: [controllerOwnerReference(ms)],
    },
    // The template is kept as written (the CRD preserves unknown fields); the API server validates
    // the full PodSpec when the pod is created.
    spec: spec as unknown as V1PodSpec,
  };
  const ordinal = parseOrdinal(groupName, ms.metadata.name);
  if (ms.spec.plugins?.length && ordinal !== undefined) {
    runPodCreatePlugins(pod, { ms, groupOrdinal: ordinal, roleName: role.name, entry, podIndex });
  }
  return pod;
}

interface ContainerLike {
  env?: Array<{ name: string } & Record<string, unknown>>;
  [key: string]: unknown;
}
