import { isEmptyDiff, mergePatchOf, type MapDiff, type ServiceReadyConditionWrite } from '../protocol/index.js';

/**
 * Request bodies for the lifecycle's writes, kept pure so their shape (and the precondition in each) is tested
 * without a cluster.
 *
 * Every body carries metadata.resourceVersion: the API server then applies it only to the Pod version it was
 * planned from and answers 409 otherwise. That makes each patch a read-modify-write, so label and finalizer
 * lists can be replaced wholesale and two writers (reconciler, operators, cooperators) never lose each other's
 * changes.
 */

export interface MetadataChange {
  labels?: MapDiff;
  annotations?: MapDiff;
  /** The whole new finalizer list (a merge patch replaces lists; the precondition makes that safe). */
  finalizers?: string[];
}

export interface MetadataPatch {
  metadata: {
    resourceVersion: string;
    labels?: Record<string, string | null>;
    annotations?: Record<string, string | null>;
    finalizers?: string[];
  };
}

/** A JSON merge patch (RFC 7386) of the Pod's metadata; undefined when there is nothing to write. */
export function metadataPatch(resourceVersion: string, change: MetadataChange): MetadataPatch | undefined {
  const metadata: MetadataPatch['metadata'] = { resourceVersion };
  if (change.labels && !isEmptyDiff(change.labels)) metadata.labels = mergePatchOf(change.labels);
  if (change.annotations && !isEmptyDiff(change.annotations)) metadata.annotations = mergePatchOf(change.annotations);
  if (change.finalizers) metadata.finalizers = change.finalizers;
  return Object.keys(metadata).length > 1 ? { metadata } : undefined;
}

export interface ConditionPatch {
  metadata: { resourceVersion: string };
  status: { conditions: ServiceReadyConditionWrite[] };
}

/**
 * A strategic merge patch for pods/status. PodStatus.conditions is merged by `type` under that patch type, so
 * the kubelet's (or KWOK's) Ready, ContainersReady, … stay untouched; a JSON merge patch would replace the list.
 */
export function conditionPatch(resourceVersion: string, condition: ServiceReadyConditionWrite): ConditionPatch {
  return { metadata: { resourceVersion }, status: { conditions: [condition] } };
}

export interface DeleteOptionsBody {
  apiVersion: 'v1';
  kind: 'DeleteOptions';
  preconditions: { uid?: string; resourceVersion?: string };
}

/**
 * Delete exactly the Pod instance that was judged deletable: a recreated Pod with the same name has another uid,
 * and a Pod changed since (a cooperator took it back) has another resourceVersion; either answers 409.
 */
export function deletePreconditions(pod: { uid?: string; resourceVersion?: string }): DeleteOptionsBody {
  const preconditions: DeleteOptionsBody['preconditions'] = {};
  if (pod.uid !== undefined) preconditions.uid = pod.uid;
  if (pod.resourceVersion !== undefined) preconditions.resourceVersion = pod.resourceVersion;
  return { apiVersion: 'v1', kind: 'DeleteOptions', preconditions };
}
