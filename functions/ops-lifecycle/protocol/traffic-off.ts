import { conditionStatus, hasServiceReadyGate, type PodState } from './pod-state.js';
import { liveLifecycles, type LifecycleView } from './view.js';

/**
 * What "traffic is off" means before a preparing ID may move to operate (OPS_LIFECYCLE_TRAFFIC_OFF):
 * - `endpointslices` (default): the Pod's Ready is not True and no EndpointSlice routes to it;
 * - `ready`: the Pod's Ready has been seen not True (for clusters where nothing reads EndpointSlices);
 * - `gate`: only the service-ready condition False (the behaviour before issue 15; cooperators' finalizers
 *   are then the only thing standing between the gate write and the operation).
 * In every mode the protection finalizers and service-ready False are required as well (readyToOperate).
 */
export const TRAFFIC_OFF_MODES = ['endpointslices', 'ready', 'gate'] as const;
export type TrafficOffMode = (typeof TRAFFIC_OFF_MODES)[number];

/** One endpoint of an EndpointSlice that names a Pod. */
export interface PodEndpoint {
  slice: string;
  podName: string;
  podUid?: string;
  /** conditions.ready; absent means ready (the EndpointSlice API's rule). */
  ready?: boolean;
}

export interface TrafficOffInput {
  mode: TrafficOffMode;
  pod: Pick<PodState, 'conditions' | 'readinessGates'>;
  podName: string;
  podUid?: string;
  /** Endpoints naming this Pod, from every EndpointSlice of its namespace; only read in `endpointslices` mode. */
  endpoints: readonly PodEndpoint[];
}

export interface TrafficOffVerdict {
  off: boolean;
  /** What it still waits for, for the log. */
  waitingFor?: string;
}

/** Does this endpoint route traffic to the Pod? */
export function routesTo(e: PodEndpoint, podName: string, podUid: string | undefined): boolean {
  const same = e.podName === podName && (podUid === undefined || e.podUid === undefined || e.podUid === podUid);
  return same && e.ready !== false;
}

/**
 * Is the Pod out of service, so that operating on it loses no traffic? A Pod without the service-ready gate in
 * its spec never turns not-Ready for the lifecycle, so waiting for Ready or endpoints would hold it forever:
 * such a Pod is judged by the gate alone (the reconciler warns that its endpoints keep it).
 */
export function trafficOff(input: TrafficOffInput): TrafficOffVerdict {
  if (input.mode === 'gate' || !hasServiceReadyGate(input.pod)) return { off: true };
  if (conditionStatus(input.pod, 'Ready') === 'True') return { off: false, waitingFor: 'the Pod to turn not Ready' };
  if (input.mode === 'ready') return { off: true };
  const routing = input.endpoints.filter((e) => routesTo(e, input.podName, input.podUid)).map((e) => e.slice);
  if (routing.length > 0) return { off: false, waitingFor: `EndpointSlice ${[...new Set(routing)].sort().join(', ')} to stop routing to the Pod` };
  return { off: true };
}

/**
 * Is the answer of trafficOff needed for this plan? Only when some ID waits in `preparing` and the Pod's own
 * metadata already lets it go (readyToOperate): otherwise the endpoints cannot change what the plan does, and
 * the reconciler saves the EndpointSlice list.
 */
export function needsTrafficCheck(view: LifecycleView, readyToOperateNow: boolean): boolean {
  return readyToOperateNow && liveLifecycles(view).some((e) => e.stage === 'preparing');
}
