import { describe, expect, it } from 'vitest';
import { SERVICE_READY_CONDITION } from './keys.js';
import { parseLifecycleView } from './view.js';
import { needsTrafficCheck, trafficOff, type PodEndpoint, type TrafficOffMode } from './traffic-off.js';
import { perIdKey } from './keys.js';

const gated = (ready: 'True' | 'False' | undefined) => ({
  readinessGates: [SERVICE_READY_CONDITION],
  conditions: [{ type: SERVICE_READY_CONDITION, status: 'False' as const }, ...(ready ? [{ type: 'Ready', status: ready }] : [])],
});
const ep = (over: Partial<PodEndpoint> = {}): PodEndpoint => ({ slice: 'web-abc', podName: 'p', podUid: 'u1', ...over });
const judge = (mode: TrafficOffMode, ready: 'True' | 'False' | undefined, endpoints: PodEndpoint[] = []) =>
  trafficOff({ mode, pod: gated(ready), podName: 'p', podUid: 'u1', endpoints });

describe('trafficOff', () => {
  it('endpointslices: waits while Ready is True, then while any slice routes to the Pod', () => {
    expect(judge('endpointslices', 'True')).toEqual({ off: false, waitingFor: 'the Pod to turn not Ready' });
    expect(judge('endpointslices', 'False', [ep({ ready: true }), ep({ slice: 'web-def' })])).toEqual({
      off: false,
      waitingFor: 'EndpointSlice web-abc, web-def to stop routing to the Pod',
    });
    expect(judge('endpointslices', 'False', [ep({ ready: false })]).off).toBe(true);
    expect(judge('endpointslices', 'False', []).off).toBe(true);
  });
  it("endpoints of another Pod, or of an earlier Pod with the same name, do not count", () => {
    expect(judge('endpointslices', 'False', [ep({ podName: 'q' }), ep({ podUid: 'old' })]).off).toBe(true);
  });
  it('ready: Ready not True is enough, whatever the slices say', () => {
    expect(judge('ready', 'True').off).toBe(false);
    expect(judge('ready', 'False', [ep()]).off).toBe(true);
  });
  it('gate: off at once', () => {
    expect(judge('gate', 'True', [ep()]).off).toBe(true);
  });
  it('a Pod without the gate in its spec is judged by the gate alone: its Ready never follows the lifecycle', () => {
    const pod = { readinessGates: [], conditions: [{ type: 'Ready', status: 'True' as const }] };
    expect(trafficOff({ mode: 'endpointslices', pod, podName: 'p', endpoints: [ep()] }).off).toBe(true);
  });
});

describe('needsTrafficCheck', () => {
  const preparing = parseLifecycleView({ [perIdKey('operating', 'a')]: '1', [perIdKey('preChecked', 'a')]: '1', [perIdKey('preparing', 'a')]: '1' });
  it('only for an ID waiting in preparing on a Pod its metadata already releases', () => {
    expect(needsTrafficCheck(preparing, true)).toBe(true);
    expect(needsTrafficCheck(preparing, false)).toBe(false);
    expect(needsTrafficCheck(parseLifecycleView({ [perIdKey('operating', 'a')]: '1' }), true)).toBe(false);
  });
});
