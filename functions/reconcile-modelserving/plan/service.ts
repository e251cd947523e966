/**
 * The headless Service of a role instance that has workers: named after the entry pod, selecting only
 * that entry pod, publishing it before it is ready (workers must reach the entry while it starts).
 */
import type { V1Service } from '@kubernetes/client-node';
import type { ModelServing, Role } from '../../../api/modelserving.js';
import { LABEL_ENTRY, LABEL_GROUP_NAME, LABEL_NAME, LABEL_ROLE, LABEL_ROLE_ID, headlessServiceName, roleId } from './names.js';
import { controllerOwnerReference } from './owner.js';

/** Kthena creates the Service only for roles with a worker template. */
export function needsHeadlessService(role: Role): boolean {
  return role.workerTemplate !== undefined;
}

export function desiredHeadlessService(ms: ModelServing, groupName: string, roleName: string, roleIndex: number): V1Service {
  const id = roleId(roleName, roleIndex);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: headlessServiceName(groupName, id),
      namespace: ms.metadata.namespace,
      labels: { [LABEL_NAME]: ms.metadata.name, [LABEL_GROUP_NAME]: groupName, [LABEL_ROLE]: roleName, [LABEL_ROLE_ID]: id },
      ownerReferences: [controllerOwnerReference(ms)],
    },
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: { [LABEL_GROUP_NAME]: groupName, [LABEL_ROLE]: roleName, [LABEL_ROLE_ID]: id, [LABEL_ENTRY]: 'true' },
    },
  };
}
