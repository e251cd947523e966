import { describe, expect, it } from 'vitest';
import { isLifecycleReady, lifecycleFinalizerFor, planCooperation } from './cooperation.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, SERVICE_READY_CONDITION } from './keys.js';
import type { ConditionStatus } from './pod-state.js';

const FIN = lifecycleFinalizerFor('web');
const KEY = 'Service/default/web';
const coop = { key: KEY, finalizer: FIN };
const conds = (ready: ConditionStatus, gate?: ConditionStatus) => [
  { type: 'Ready', status: ready },
  ...(gate ? [{ type: SERVICE_READY_CONDITION, status: gate }] : []),
];
const recorded = { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { [KEY]: FIN } }) };

describe('isLifecycleReady', () => {
  it.each([
    { ready: 'True' as const, gate: 'True' as const, deleting: false, want: true },
    { ready: 'True' as const, gate: undefined, deleting: false, want: true },
    { ready: 'True' as const, gate: 'False' as const, deleting: false, want: false },
    { ready: 'True' as const, gate: 'Unknown' as const, deleting: false, want: false },
    { ready: 'False' as const, gate: 'True' as const, deleting: false, want: false },
    { ready: 'True' as const, gate: 'True' as const, deleting: true, want: false },
  ])('Ready=$ready service-ready=$gate deleting=$deleting → $want', ({ ready, gate, deleting, want }) => {
    expect(isLifecycleReady({ conditions: conds(ready, gate), deleting })).toBe(want);
  });
});

describe('lifecycleFinalizerFor', () => {
  it("is ResourceConsist's prefix + md5(name)[8:24]", () => {
    // md5("web") = 2567a5ec9705eb7ac2c984033e06189d
    expect(FIN).toBe('prot.podopslifecycle.kusionstack.io/9705eb7ac2c98403');
  });
});

describe('planCooperation', () => {
  it('records the expectation, then holds a lifecycle-ready Pod with its finalizer', () => {
    const p = planCooperation({ pod: { annotations: {}, finalizers: [], conditions: conds('True', 'True'), deleting: false }, cooperator: coop, selected: true });
    expect(p).toEqual({ lifecycleReady: true, annotations: { set: recorded, remove: [] }, addFinalizer: FIN, changed: true });
  });

  it('releases the Pod once the lifecycle takes it out of service', () => {
    const p = planCooperation({ pod: { annotations: recorded, finalizers: [FIN, 'other'], conditions: conds('True', 'False'), deleting: false }, cooperator: coop, selected: true });
    expect(p).toEqual({ lifecycleReady: false, annotations: { set: {}, remove: [] }, removeFinalizer: FIN, changed: true });
  });

  it('has nothing to do when the Pod is already where it should be', () => {
    expect(planCooperation({ pod: { annotations: recorded, finalizers: [FIN], conditions: conds('True', 'True'), deleting: false }, cooperator: coop, selected: true }).changed).toBe(false);
  });

  it('keeps other expectations and unknown fields of the annotation', () => {
    const other = { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ extra: 1, expectedFinalizers: { 'Service/default/api': 'prot.podopslifecycle.kusionstack.io/a' } }) };
    const p = planCooperation({ pod: { annotations: other, finalizers: [], conditions: conds('False'), deleting: false }, cooperator: coop, selected: true });
    expect(JSON.parse(p.annotations.set[AVAILABLE_CONDITIONS_ANNOTATION] ?? '')).toEqual({
      extra: 1,
      expectedFinalizers: { 'Service/default/api': 'prot.podopslifecycle.kusionstack.io/a', [KEY]: FIN },
    });
  });

  it('a cooperator that no longer covers the Pod lets go and forgets its expectation', () => {
    const p = planCooperation({ pod: { annotations: recorded, finalizers: [FIN], conditions: conds('True', 'True'), deleting: false }, cooperator: coop, selected: false });
    expect(p.removeFinalizer).toBe(FIN);
    expect(p.annotations.set).toEqual({ [AVAILABLE_CONDITIONS_ANNOTATION]: '{}' });
  });

  it('refuses a finalizer without the protection prefix', () => {
    expect(() => planCooperation({ pod: { annotations: {}, finalizers: [], conditions: [], deleting: false }, cooperator: { key: KEY, finalizer: 'example.com/x' }, selected: true })).toThrow(/prefix/);
  });
});
