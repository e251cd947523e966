/**
 * `spec.plugins`: Kthena's built-in pod hooks (pkg/model-serving-controller/plugins), run when a pod is
 * built (Kthena's OnPodCreate). A plugin runs for the pods its `scope` selects: the roles listed (all when
 * none) and the target (`Entry`, `Worker`, `All`; unset is all). Kthena also has an OnPodReady hook; its
 * only built-in plugin does nothing there, so neither does Ripple. A name that is not a built-in plugin
 * is refused by `parseModelServing` (ConfigValid=False), as Kthena refuses to build its plugin chain.
 */
import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import type { BUILT_IN_PLUGINS, ModelServing, Plugin } from '../../../api/modelserving.js';

export interface PodHookRequest {
  ms: ModelServing;
  groupOrdinal: number;
  roleName: string;
  entry: boolean;
  /** 0 for the entry pod, 1..N for workers (the pod name's last segment). */
  podIndex: number;
}

type OnPodCreate = (pod: V1Pod, req: PodHookRequest) => void;

/** LeaderWorkerSet's pod labels (sigs.k8s.io/lws). */
export const LWS_LABELS = {
  name: 'leaderworkerset.sigs.k8s.io/name',
  groupIndex: 'leaderworkerset.sigs.k8s.io/group-index',
  workerIndex: 'leaderworkerset.sigs.k8s.io/worker-index',
  groupKey: 'leaderworkerset.sigs.k8s.io/group-key',
} as const;

/**
 * `lws-standard-labels`: for a ModelServing owned by a LeaderWorkerSet, the labels LWS itself puts on its
 * pods, so tools that select LWS pods keep working. The group key is LWS's: the hex SHA-1 of
 * `<lws name>-<group index>`. A ModelServing no LeaderWorkerSet owns is left alone.
 */
const lwsStandardLabels: OnPodCreate = (pod, req) => {
  const lws = (req.ms.metadata.ownerReferences as Array<{ kind?: string; name?: string }> | undefined)?.find((o) => o.kind === 'LeaderWorkerSet' && o.name);
  if (!lws?.name) return;
  const labels = (pod.metadata ??= {}).labels ?? {};
  labels[LWS_LABELS.name] = lws.name;
  labels[LWS_LABELS.groupIndex] = String(req.groupOrdinal);
  labels[LWS_LABELS.workerIndex] = String(req.entry ? 0 : req.podIndex);
  labels[LWS_LABELS.groupKey] = createHash('sha1').update(`${lws.name}-${req.groupOrdinal}`).digest('hex');
  pod.metadata.labels = labels;
};

const REGISTRY: Record<(typeof BUILT_IN_PLUGINS)[number], OnPodCreate> = {
  'lws-standard-labels': lwsStandardLabels,
};

function inScope(plugin: Plugin, req: PodHookRequest): boolean {
  const scope = plugin.scope;
  if (!scope) return true;
  if (scope.roles?.length && !scope.roles.includes(req.roleName)) return false;
  if (!scope.target || scope.target === 'All') return true;
  return scope.target === (req.entry ? 'Entry' : 'Worker');
}

/** Runs the spec's plugins on a pod being built, in the order the spec lists them. */
export function runPodCreatePlugins(pod: V1Pod, req: PodHookRequest): void {
  for (const plugin of req.ms.spec.plugins ?? []) {
    const hook = REGISTRY[plugin.name as keyof typeof REGISTRY];
    if (hook && inScope(plugin, req)) hook(pod, req);
  }
}
