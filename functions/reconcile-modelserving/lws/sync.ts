/**
 * LeaderWorkerSet compatibility, the I/O half: read the LeaderWorkerSet, server-side apply its shadow
 * ModelServing, write its status back (shadow.ts plans all three).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { parseLeaderWorkerSet, type LeaderWorkerSet, type LeaderWorkerSetStatus } from '../../../api/leaderworkerset.js';
import { isStatus, kubeRequest } from '../../../kube/raw.js';
import { objectPath, Resources } from '../../../kube/resources.js';
import { resourceVersionOf } from '../read-state.js';
import { SHADOW_FIELD_MANAGER, type ShadowModelServing } from './shadow.js';

/**
 * The LeaderWorkerSet of that name, or undefined when there is none — also when its CRD is not installed
 * (the API server answers 404 for a resource it does not serve), so a cluster without it costs one GET
 * per reconcile of a ModelServing that is gone, nothing else.
 */
export async function readLeaderWorkerSet(kc: KubeConfig, namespace: string, name: string): Promise<LeaderWorkerSet | undefined> {
  let raw: unknown;
  try {
    raw = await kubeRequest(kc, objectPath(Resources.leaderWorkerSet, namespace, name));
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
  const lws = parseLeaderWorkerSet(raw);
  // The API server validated it against the CRD; one that does not parse comes from another CRD version.
  if (!lws) throw new Error(`LeaderWorkerSet ${namespace}/${name} does not parse as leaderworkerset.x-k8s.io/v1`);
  return lws;
}

/** Creates or updates the shadow ModelServing (server-side apply, forced: this function owns those fields); its new resourceVersion. */
export async function applyShadow(kc: KubeConfig, namespace: string, name: string, shadow: ShadowModelServing): Promise<string | undefined> {
  const answer = await kubeRequest(kc, objectPath(Resources.modelServing, namespace, name), {
    method: 'PATCH',
    body: shadow.body,
    contentType: 'application/apply-patch+yaml',
    query: { fieldManager: SHADOW_FIELD_MANAGER, force: true },
  });
  return resourceVersionOf(answer);
}

/** Writes the LeaderWorkerSet's status, preconditioned on the resourceVersion read (a 409 is retried by the queue). */
export async function writeLwsStatus(kc: KubeConfig, lws: LeaderWorkerSet, status: LeaderWorkerSetStatus): Promise<void> {
  const path = `${objectPath(Resources.leaderWorkerSet, lws.metadata.namespace, lws.metadata.name)}/status`;
  const body: Record<string, unknown> = { status };
  if (lws.metadata.resourceVersion !== undefined) body.metadata = { resourceVersion: lws.metadata.resourceVersion };
  await kubeRequest(kc, path, { method: 'PATCH', body, contentType: 'application/merge-patch+json' });
}
