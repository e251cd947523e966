import { describe, expect, it } from 'vitest';
import { AVAILABLE_CONDITIONS_ANNOTATION, podState as bare, SERVICE_READY_CONDITION, type ConditionStatus } from '../protocol/index.js';
import { planServiceCooperation, selects, serviceCooperator, SERVICE_FINALIZER_PREFIX } from './plan.js';

const NS = 'shop';
// Pods with the readiness gate, unless a test says otherwise.
const podState: typeof bare = (p = {}) => bare({ readinessGates: [SERVICE_READY_CONDITION], ...p });
const WEB = serviceCooperator(NS, 'web');
const OLD = serviceCooperator(NS, 'old');
const labels = { app: 'web' };
const conditions = (ready: ConditionStatus, gate: ConditionStatus) => [
  { type: 'Ready', status: ready },
  { type: SERVICE_READY_CONDITION, status: gate },
];
const expecting = (...coops: Array<{ key: string; finalizer: string }>) => ({
  [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: Object.fromEntries(coops.map((c) => [c.key, c.finalizer])) }),
});
const services = [{ name: 'web', selector: { app: 'web' } }];

describe('serviceCooperator', () => {
  it("names Ripple's own finalizer (not ResourceConsist's) and the ResourceConsist expectation key", () => {
    expect(WEB.key).toBe('Service/shop/web');
    expect(WEB.finalizer.startsWith(SERVICE_FINALIZER_PREFIX)).toBe(true);
    expect(WEB.finalizer).toMatch(/^prot\.podopslifecycle\.kusionstack\.io\/ripple-service-[0-9a-f]{16}$/);
  });
});

describe('selects', () => {
  it('needs every selector label; an empty selector selects nothing', () => {
    expect(selects({ app: 'web' }, { app: 'web', x: '1' })).toBe(true);
    expect(selects({ app: 'web', tier: 'a' }, { app: 'web' })).toBe(false);
    expect(selects({}, { app: 'web' })).toBe(false);
  });
});

describe('planServiceCooperation', () => {
  it('a ready Pod a Service selects: its expectation is recorded and its finalizer added, in one change', () => {
    const plan = planServiceCooperation({ namespace: NS, pod: podState({ labels, conditions: conditions('True', 'True') }), services });
    expect(plan.finalizers).toEqual([WEB.finalizer]);
    expect(plan.annotations.set[AVAILABLE_CONDITIONS_ANNOTATION]).toBe(expecting(WEB)[AVAILABLE_CONDITIONS_ANNOTATION]);
    expect(plan.changed).toBe(true);
  });

  it('nothing to do when the Pod is held and recorded already', () => {
    const plan = planServiceCooperation({ namespace: NS, pod: podState({ labels, annotations: expecting(WEB), finalizers: [WEB.finalizer], conditions: conditions('True', 'True') }), services });
    expect(plan.changed).toBe(false);
    expect(plan.needsRoutes).toBe(false);
  });

  it('a Pod taken out of service keeps the finalizer until the Service stops routing to it', () => {
    const pod = podState({ labels, annotations: expecting(WEB), finalizers: ['other', WEB.finalizer], conditions: conditions('True', 'False') });
    const unknown = planServiceCooperation({ namespace: NS, pod, services });
    expect(unknown).toMatchObject({ needsRoutes: true, changed: false });
    const routed = planServiceCooperation({ namespace: NS, pod, services, routedBy: new Set(['web']) });
    expect(routed).toMatchObject({ needsRoutes: false, heldBy: ['web'], changed: false });
    const off = planServiceCooperation({ namespace: NS, pod, services, routedBy: new Set(['another-service']) });
    expect(off.finalizers).toEqual(['other']);
    // The expectation stays: the Pod is not declared available again before the Service takes it back.
    expect(off.annotations.set).toEqual({});
  });

  it('a Pod without the readiness gate is released on the condition alone (its Ready never follows the gate)', () => {
    const pod = bare({ labels, annotations: expecting(WEB), finalizers: [WEB.finalizer], conditions: conditions('True', 'False') });
    expect(planServiceCooperation({ namespace: NS, pod, services }).finalizers).toEqual([]);
  });

  it('a deleting Pod is released the same way (its finalizer would otherwise hold the deletion)', () => {
    const pod = podState({ labels, annotations: expecting(WEB), finalizers: [WEB.finalizer], conditions: conditions('True', 'True'), deleting: true });
    expect(planServiceCooperation({ namespace: NS, pod, services, routedBy: new Set(['web']) }).heldBy).toEqual(['web']);
    expect(planServiceCooperation({ namespace: NS, pod, services, routedBy: new Set() }).finalizers).toEqual([]);
  });

  it('a Service that went away or stopped cooperating, while the Pod drains: released once unrouted, its expectation forgotten', () => {
    const pod = podState({ labels, annotations: expecting(WEB, OLD), finalizers: [OLD.finalizer], conditions: conditions('True', 'False') });
    expect(planServiceCooperation({ namespace: NS, pod, services, routedBy: new Set(['old']) })).toMatchObject({ heldBy: ['old'], changed: false });
    const plan = planServiceCooperation({ namespace: NS, pod, services, routedBy: new Set() });
    expect(plan.finalizers).toEqual([]);
    expect(plan.annotations.set[AVAILABLE_CONDITIONS_ANNOTATION]).toBe(expecting(WEB)[AVAILABLE_CONDITIONS_ANNOTATION]);
  });

  it('a Service that stopped cooperating with a serving Pod: released at once (nothing is draining it)', () => {
    const pod = podState({ labels, annotations: expecting(WEB, OLD), finalizers: [WEB.finalizer, OLD.finalizer], conditions: conditions('True', 'True') });
    const plan = planServiceCooperation({ namespace: NS, pod, services });
    expect(plan.needsRoutes).toBe(false);
    expect(plan.finalizers).toEqual([WEB.finalizer]);
  });

  it("leaves other cooperators' finalizers and expectations alone (ResourceConsist's for the same Service name too)", () => {
    const rc = { key: 'Service/shop/web', finalizer: 'prot.podopslifecycle.kusionstack.io/2567a5ec9705eb7a' };
    const pod = podState({ labels: { app: 'other' }, annotations: expecting(rc), finalizers: [rc.finalizer], conditions: conditions('True', 'True') });
    const plan = planServiceCooperation({ namespace: NS, pod, services: [], routedBy: new Set() });
    expect(plan.changed).toBe(false);
  });

  it('a draining Pod the Service no longer selects is released once unrouted', () => {
    const pod = podState({ labels: { app: 'moved' }, annotations: expecting(WEB), finalizers: [WEB.finalizer], conditions: conditions('False', 'False') });
    expect(planServiceCooperation({ namespace: NS, pod, services }).needsRoutes).toBe(true);
    const plan = planServiceCooperation({ namespace: NS, pod, services, routedBy: new Set() });
    expect(plan.finalizers).toEqual([]);
    expect(plan.annotations.set[AVAILABLE_CONDITIONS_ANNOTATION]).toBe('{}');
  });

  // OPS_LIFECYCLE_SERVICE_COOPERATION turned off: cooperate.ts plans with no Service at all for a Pod still
  // holding Ripple's finalizers, so everything it holds is a leftover and is released like one.
  it('cooperation turned off (no Services): a draining Pod is released once unrouted, its expectation forgotten', () => {
    const pod = podState({ labels, annotations: expecting(WEB), finalizers: ['other', WEB.finalizer], conditions: conditions('True', 'False') });
    expect(planServiceCooperation({ namespace: NS, pod, services: [] })).toMatchObject({ needsRoutes: true, changed: false });
    expect(planServiceCooperation({ namespace: NS, pod, services: [], routedBy: new Set(['web']) })).toMatchObject({ heldBy: ['web'], changed: false });
    const plan = planServiceCooperation({ namespace: NS, pod, services: [], routedBy: new Set() });
    expect(plan.finalizers).toEqual(['other']);
    expect(plan.annotations.set[AVAILABLE_CONDITIONS_ANNOTATION]).toBe('{}');
  });

  it('cooperation turned off (no Services): a serving Pod is released at once and adds nothing', () => {
    const pod = podState({ labels, annotations: expecting(WEB), finalizers: [WEB.finalizer], conditions: conditions('True', 'True') });
    const plan = planServiceCooperation({ namespace: NS, pod, services: [] });
    expect(plan).toMatchObject({ needsRoutes: false, changed: true, finalizers: [] });
    expect(planServiceCooperation({ namespace: NS, pod: podState({ labels, conditions: conditions('True', 'True') }), services: [] }).changed).toBe(false);
  });
});
