import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { isStatus, kubeRequest } from '../../../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../../../kube/resources.js';
import type { ServiceReadyConditionWrite } from '../protocol/index.js';
import { conditionPatch, deletePreconditions, metadataPatch, type MetadataChange } from './patches.js';
import { lifecyclePodSchema, type LifecyclePod, type PodRef } from './pod.js';

const MERGE_PATCH = 'application/merge-patch+json';
const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

/** The Pod as it is now, or undefined when it is gone (or, with ref.uid, replaced by another instance). */
export async function readPod(kc: KubeConfig, ref: PodRef): Promise<LifecyclePod | undefined> {
  try {
    const pod = lifecyclePodSchema.parse(await kubeRequest(kc, objectPath(Resources.pod, ref.namespace, ref.name)));
    if (ref.uid !== undefined && pod.metadata.uid !== ref.uid) return undefined;
    return pod;
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

function resourceVersionOf(pod: LifecyclePod): string {
  const rv = pod.metadata.resourceVersion;
  // Without it the write would carry no precondition; an API server always sets it, so this is a bad read.
  if (rv === undefined) throw new Error(`pod ${pod.metadata.namespace}/${pod.metadata.name} has no resourceVersion`);
  return rv;
}

/**
 * Writes labels/annotations/finalizers planned from `pod`, only if the Pod is still that version (409 otherwise).
 * Returns the Pod as written, or `pod` itself when there was nothing to write.
 */
export async function patchPodMetadata(kc: KubeConfig, pod: LifecyclePod, change: MetadataChange): Promise<LifecyclePod> {
  const body = metadataPatch(resourceVersionOf(pod), change);
  if (body === undefined) return pod;
  const path = objectPath(Resources.pod, pod.metadata.namespace, pod.metadata.name);
  return lifecyclePodSchema.parse(await kubeRequest(kc, path, { method: 'PATCH', body, contentType: MERGE_PATCH }));
}

/** Writes the service-ready condition through pods/status, merged by condition type, preconditioned like above. */
export async function patchServiceReady(kc: KubeConfig, pod: LifecyclePod, condition: ServiceReadyConditionWrite): Promise<LifecyclePod> {
  const path = `${objectPath(Resources.pod, pod.metadata.namespace, pod.metadata.name)}/status`;
  const body = conditionPatch(resourceVersionOf(pod), condition);
  return lifecyclePodSchema.parse(await kubeRequest(kc, path, { method: 'PATCH', body, contentType: STRATEGIC_MERGE_PATCH }));
}

/**
 * Deletes exactly this instance at this version; 404 counts as done (deletion is idempotent). True when this
 * call deleted it, false when it was already gone.
 */
export async function deletePodExactly(kc: KubeConfig, pod: LifecyclePod): Promise<boolean> {
  const path = objectPath(Resources.pod, pod.metadata.namespace, pod.metadata.name);
  try {
    await kubeRequest(kc, path, { method: 'DELETE', body: deletePreconditions(pod.metadata) });
    return true;
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
    return false;
  }
}

const serviceSchema = z.object({
  spec: z.object({ selector: z.record(z.string(), z.string()).optional() }).passthrough().optional(),
});

/** A Service's selector, or undefined when the Service does not exist. */
export async function readServiceSelector(
  kc: KubeConfig,
  namespace: string,
  name: string,
): Promise<{ selector?: Record<string, string> } | undefined> {
  try {
    const svc = serviceSchema.parse(await kubeRequest(kc, objectPath(Resources.service, namespace, name)));
    return { selector: svc.spec?.selector };
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

export function isConflict(err: unknown): boolean {
  return isStatus(err, 409);
}

/** A read-modify-write lost to other writers more times than it was allowed to retry. Transient: retry later. */
export class LifecycleConflictError extends Error {
  override readonly name = 'LifecycleConflictError';
}

/**
 * Runs a read-modify-write until it is not beaten by a concurrent writer. `attempt` must read the Pod fresh each
 * time; a 409 means somebody wrote in between, so the plan is redone from their version. The short waits grow
 * so that a few contending writers spread out instead of colliding in lock step.
 */
export async function retryOnConflict<T>(what: string, attempt: () => Promise<T>, maxAttempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (!isConflict(err)) throw err;
      if (i >= maxAttempts) throw new LifecycleConflictError(`${what}: still conflicting after ${maxAttempts} attempts`, { cause: err });
      await new Promise((r) => setTimeout(r, 5 * 2 ** i));
    }
  }
}

const podListSchema = z.object({ items: z.array(lifecyclePodSchema) });

/** The controlled Pods of a namespace (the availability budget counts an owner's Pods among them). */
export async function listControlledPods(kc: KubeConfig, namespace: string, labelSelector: string): Promise<LifecyclePod[]> {
  const list = podListSchema.parse(await kubeRequest(kc, collectionPath(Resources.pod, namespace), { query: { labelSelector } }));
  return list.items;
}
