/**
 * Names, label keys, annotations and env vars of everything a ModelServing owns — Kthena's, so
 * existing selectors, dashboards and scripts keep working.
 */

export const LABEL_NAME = 'modelserving.volcano.sh/name';
export const LABEL_GROUP_NAME = 'modelserving.volcano.sh/group-name';
export const LABEL_ROLE = 'modelserving.volcano.sh/role';
export const LABEL_ROLE_ID = 'modelserving.volcano.sh/role-id';
export const LABEL_ENTRY = 'modelserving.volcano.sh/entry';
export const LABEL_REVISION = 'modelserving.volcano.sh/revision';
export const LABEL_ROLE_TEMPLATE_HASH = 'modelserving.volcano.sh/role-template-hash';

/** Every label the controller reads back; a pod template cannot override them. */
export const CONTROL_LABELS = [
  LABEL_NAME,
  LABEL_GROUP_NAME,
  LABEL_ROLE,
  LABEL_ROLE_ID,
  LABEL_ENTRY,
  LABEL_REVISION,
  LABEL_ROLE_TEMPLATE_HASH,
] as const;

export const ENV_GROUP_SIZE = 'GROUP_SIZE';
export const ENV_ENTRY_ADDRESS = 'ENTRY_ADDRESS';
export const ENV_WORKER_INDEX = 'WORKER_INDEX';

export const ANNOTATION_POD_DELETION_COST = 'controller.kubernetes.io/pod-deletion-cost';
/** Volcano: which PodGroup a pod belongs to, and its task inside it. */
export const ANNOTATION_VOLCANO_GROUP_NAME = 'scheduling.k8s.io/group-name';
export const ANNOTATION_VOLCANO_TASK_SPEC = 'volcano.sh/task-spec';
/** Volcano queue, read from the ModelServing's own annotations. */
export const ANNOTATION_VOLCANO_QUEUE = 'scheduling.volcano.sh/queue-name';

export function servingGroupName(msName: string, ordinal: number): string {
  return `${msName}-${ordinal}`;
}

export function roleId(roleName: string, index: number): string {
  return `${roleName}-${index}`;
}

/** Pod `podIndex` of a role instance: 0 is the entry pod, 1..workerReplicas the workers. */
export function podName(groupName: string, roleIdValue: string, podIndex: number): string {
  return `${groupName}-${roleIdValue}-${podIndex}`;
}

export function entryPodName(groupName: string, roleIdValue: string): string {
  return podName(groupName, roleIdValue, 0);
}

/** The headless Service of a role instance has the entry pod's name, so `ENTRY_ADDRESS` resolves. */
export function headlessServiceName(groupName: string, roleIdValue: string): string {
  return entryPodName(groupName, roleIdValue);
}

export function controllerRevisionName(msName: string, revision: string): string {
  return `${msName}-${revision}`;
}

/**
 * The ordinal in `<prefix>-<ordinal>`, or undefined. Only canonical decimals count ("7", not "07"),
 * so that a parsed name always maps back to the same name.
 */
export function parseOrdinal(name: string, prefix: string): number | undefined {
  if (!name.startsWith(`${prefix}-`)) return undefined;
  const rest = name.slice(prefix.length + 1);
  if (!/^(0|[1-9][0-9]{0,9})$/.test(rest)) return undefined;
  const n = Number(rest);
  return n <= 2147483647 ? n : undefined;
}

/**
 * `status.labelSelector`: exactly one pod per ServingGroup (the entry pod of the first role's
 * instance 0), so the scale subresource reports ServingGroups, not pods. Keys sorted as
 * apimachinery's `labels.Set.String()` writes them.
 */
export function statusLabelSelector(msName: string, firstRoleName: string | undefined): string {
  const set: Record<string, string> = { [LABEL_NAME]: msName, [LABEL_ENTRY]: 'true' };
  if (firstRoleName !== undefined) {
    set[LABEL_ROLE] = firstRoleName;
    set[LABEL_ROLE_ID] = roleId(firstRoleName, 0);
  }
  return Object.keys(set)
    .sort()
    .map((k) => `${k}=${set[k]}`)
    .join(',');
}

/** What Kubernetes limits to 63 characters: label values and Service names (DNS-1035 labels). */
export const KUBE_NAME_LIMIT = 63;

/**
 * The first generated name at `ordinal` that Kubernetes would refuse for being longer than 63
 * characters: the group-name label value `<ms>-<ordinal>`, or (for roles with a worker template,
 * which get a headless Service) the Service name of the role's highest instance,
 * `<ms>-<ordinal>-<role>-<replicas-1>-0`. Pod names (253) and role-id values (a role name is at most
 * 12 characters) cannot be the problem. Undefined when every name fits.
 */
export function overlongNameAt(
  msName: string,
  ordinal: number,
  roles: ReadonlyArray<{ name: string; replicas: number; hasService: boolean }>,
): string | undefined {
  const group = servingGroupName(msName, ordinal);
  if (group.length > KUBE_NAME_LIMIT) return group;
  for (const r of roles) {
    if (!r.hasService || r.replicas <= 0) continue;
    const svc = headlessServiceName(group, roleId(r.name, r.replicas - 1));
    if (svc.length > KUBE_NAME_LIMIT) return svc;
  }
  return undefined;
}
