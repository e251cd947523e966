/** Joins the per-pod KV-cache and queue results with the pods each variant owns. */
import type { ReplicaMetrics } from '../saturation/types.js';

/**
 * `podVariant` maps each pod name to its variant (the Deployment whose selector matches the pod).
 * A pod missing from one query counts 0 for it; a pod in neither, or not owned by any variant, is
 * left out.
 */
export function joinReplicaMetrics(
  kvByPod: ReadonlyMap<string, number>,
  queueByPod: ReadonlyMap<string, number>,
  podVariant: ReadonlyMap<string, string> | Readonly<Record<string, string>>,
): ReplicaMetrics[] {
  const owner = (pod: string) => (podVariant instanceof Map ? podVariant.get(pod) : (podVariant as Readonly<Record<string, string>>)[pod]);
  const pods = new Set([...kvByPod.keys(), ...queueByPod.keys()]);
  const out: ReplicaMetrics[] = [];
  for (const pod of [...pods].sort()) {
    const variantName = owner(pod);
    if (variantName === undefined) continue;
    out.push({ podName: pod, variantName, kvCacheUsage: kvByPod.get(pod) ?? 0, queueLength: queueByPod.get(pod) ?? 0 });
  }
  return out;
}
