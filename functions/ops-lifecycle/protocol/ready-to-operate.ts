import { protectionFinalizers, serviceReadyStatus, type PodState } from './pod-state.js';

/**
 * May a preparing ID move on to operate, as far as the Pod's own metadata tells? Only once every cooperation
 * controller has let go of the Pod and the service-ready condition has been seen False.
 *
 * kuperator answers "yes" as soon as the service-ready condition is absent, before it looks at finalizers. Ripple
 * does not: a protection finalizer always holds the Pod, and an absent condition is not a drained Pod. It only
 * means the lifecycle has not written the condition yet (it writes False in the same reconcile that adds
 * `preparing`), so operate waits for the watch event of that write. Whether traffic is really off (Ready,
 * EndpointSlices) is judged apart, by trafficOff.
 */
export function readyToOperate(pod: Pick<PodState, 'finalizers' | 'conditions'>): boolean {
  if (protectionFinalizers(pod.finalizers).length > 0) return false;
  return serviceReadyStatus(pod) === 'False';
}
