import { protectionFinalizers, serviceReadyStatus, type PodState } from './pod-state.js';

/**
 * May a preparing ID move on to operate? Only once every cooperation controller has let go of the Pod.
 *
 * kuperator answers "yes" as soon as the service-ready condition is absent, before it looks at finalizers; a
 * Pod without the condition but with a protection finalizer would then be operated while a traffic controller
 * still routes to it. Here a protection finalizer always holds the Pod, whatever the condition says.
 * The outcomes of kuperator's own cases are unchanged.
 */
export function readyToOperate(pod: Pick<PodState, 'finalizers' | 'conditions'>): boolean {
  if (protectionFinalizers(pod.finalizers).length > 0) return false;
  const status = serviceReadyStatus(pod);
  // No condition: nobody was told the Pod is in service, so there is nothing to drain.
  if (status === undefined) return true;
  return status === 'False';
}
