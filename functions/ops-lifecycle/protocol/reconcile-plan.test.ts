import { describe, expect, it } from 'vitest';
import { AVAILABLE_CONDITIONS_ANNOTATION, CONTROL_LABEL, Label, perIdKey as k, permissionKey as perm, PROTECTION_FINALIZER_PREFIX, SERVICE_READY_CONDITION } from './keys.js';
import { podState, type ConditionStatus, type PodState } from './pod-state.js';
import { expectationsToVerify, planReconcile } from './reconcile-plan.js';

const NOW = 1_717_505_885_197_871_195n;
const TS = NOW.toString();
const CONTROL = { [CONTROL_LABEL]: 'true' };

function pod(labels: Record<string, string>, extra: Partial<PodState> & { ready?: boolean; gate?: ConditionStatus } = {}): PodState {
  const conditions = [...(extra.conditions ?? [])];
  if (extra.ready !== undefined) conditions.push({ type: 'Ready', status: extra.ready ? 'True' : 'False' });
  if (extra.gate !== undefined) conditions.push({ type: SERVICE_READY_CONDITION, status: extra.gate });
  return podState({ readinessGates: [SERVICE_READY_CONDITION], ...extra, labels: { ...CONTROL, ...labels }, conditions });
}

describe('planReconcile', () => {
  it('skips Pods without the control label, and Pods being deleted', () => {
    expect(planReconcile({ pod: podState({ labels: { [k('operating', 'a')]: '1' } }), now: NOW })).toMatchObject({ changed: false, skipped: 'NotControlled' });
    expect(planReconcile({ pod: pod({ [k('operating', 'a')]: '1' }, { deleting: true }), now: NOW })).toMatchObject({ changed: false, skipped: 'Deleting' });
  });

  it('a new Pod: gate appended True; service-available waits for Ready', () => {
    const p = planReconcile({ pod: pod({}), now: NOW });
    expect(p.serviceReady).toMatchObject({ type: SERVICE_READY_CONDITION, status: 'True', message: 'updated by PodOpsLifecycle', lastTransitionTime: '2024-06-04T12:58:05Z' });
    expect(p.events).toEqual([{ type: 'Normal', reason: 'ServiceReady', message: 'append service readiness gate to: True' }]);
    expect(p.labels).toEqual({ set: {}, remove: [] });
  });

  it('a Ready Pod with no lifecycle gets service-available, and the creation markers go', () => {
    const p = planReconcile({ pod: pod({ [Label.creating]: '1', [Label.completing]: '1' }, { ready: true, gate: 'True' }), now: NOW });
    expect(p.labels).toEqual({ set: { [Label.serviceAvailable]: TS }, remove: [Label.completing, Label.creating] });
    expect(p.serviceReady).toBeUndefined();
    expect(p.view.phase).toBe('ServiceAvailable');
  });

  it('a Pod that is not Ready loses service-available (#283)', () => {
    const p = planReconcile({ pod: pod({ [Label.serviceAvailable]: '1' }, { ready: false, gate: 'True' }), now: NOW });
    expect(p.labels.remove).toEqual([Label.serviceAvailable]);
  });

  it('service-available waits for the expected finalizers', () => {
    const annotations = { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { 'Service/ns/web': `${PROTECTION_FINALIZER_PREFIX}/x` } }) };
    expect(planReconcile({ pod: pod({}, { ready: true, gate: 'True', annotations }), now: NOW }).labels.set).toEqual({});
  });

  it('a stale expectation is dropped from the annotation and no longer holds the Pod, in the same plan', () => {
    const annotations = {
      [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { 'Service/ns/gone': `${PROTECTION_FINALIZER_PREFIX}/x`, 'Service/ns/web': `${PROTECTION_FINALIZER_PREFIX}/y` } }),
    };
    const p0 = pod({}, { ready: true, gate: 'True', annotations, finalizers: [`${PROTECTION_FINALIZER_PREFIX}/y`] });
    expect(expectationsToVerify(p0)).toEqual([{ key: 'Service/ns/gone', finalizer: `${PROTECTION_FINALIZER_PREFIX}/x`, service: { namespace: 'ns', name: 'gone' } }]);
    const p = planReconcile({ pod: p0, now: NOW, staleExpectationKeys: ['Service/ns/gone'] });
    expect(p.labels.set).toEqual({ [Label.serviceAvailable]: TS });
    expect(JSON.parse(p.annotations.set[AVAILABLE_CONDITIONS_ANNOTATION] ?? '')).toEqual({ expectedFinalizers: { 'Service/ns/web': `${PROTECTION_FINALIZER_PREFIX}/y` } });
  });

  it('after Begin: pre-check passes, the ID is preparing, service-available goes, and the gate turns False in one plan', () => {
    const p = planReconcile({
      pod: pod({ [Label.serviceAvailable]: '1', [k('operating', 'a')]: '1', [k('operationType', 'a')]: 'update' }, { ready: true, gate: 'True' }),
      now: NOW,
    });
    expect(p.labels).toEqual({
      set: { [perm('update')]: TS, [k('preChecked', 'a')]: TS, [k('preparing', 'a')]: TS },
      remove: [Label.serviceAvailable],
    });
    expect(p.serviceReady?.status).toBe('False');
    expect(p.view.phase).toBe('Preparing');
  });

  it('operate is granted only on the gate observed False, never on the one the plan is about to write', () => {
    const preparing = { [k('operating', 'a')]: '1', [k('operationType', 'a')]: 'update', [k('preChecked', 'a')]: '2', [perm('update')]: '2', [k('preparing', 'a')]: '3' };
    expect(planReconcile({ pod: pod(preparing, { ready: true, gate: 'True' }), now: NOW }).labels.set).toEqual({});
    expect(planReconcile({ pod: pod(preparing, { ready: false, gate: 'False' }), now: NOW }).labels).toEqual({
      set: { [k('operate', 'a')]: TS },
      remove: [k('preparing', 'a')],
    });
  });

  it('a failing post-check holds the ID in post-check, gate False', () => {
    const labels = { [k('operated', 'a')]: '1', [k('doneOperationType', 'a')]: 'u', [k('postCheck', 'a')]: '2' };
    const p = planReconcile({ pod: pod(labels, { gate: 'False' }), now: NOW, checks: { postCheck: false } });
    expect(p.changed).toBe(false);
  });

  it('stages are judged per ID: a post-check pass does not stamp post-checked on an ID in pre-check', () => {
    const labels = {
      [k('operated', 'a')]: '1',
      [k('doneOperationType', 'a')]: 'u',
      [k('postCheck', 'a')]: '2',
      [k('operating', 'b')]: '3',
      [k('operationType', 'b')]: 'r',
      [k('preCheck', 'b')]: '4',
    };
    const p = planReconcile({ pod: pod(labels, { gate: 'False' }), now: NOW, checks: { preCheck: false } });
    expect(p.labels.set).toEqual({ [k('postChecked', 'a')]: TS, [k('completing', 'a')]: TS });
    expect(p.labels.remove).toEqual([k('postCheck', 'a')]);
  });

  it('warns about malformed labels, an unreadable annotation and a missing gate', () => {
    const p = planReconcile({
      pod: podState({
        labels: { ...CONTROL, 'operating.podopslifecycle.kusionstack.io': '1', [k('operating', 'x')]: 'soon' },
        annotations: { [AVAILABLE_CONDITIONS_ANNOTATION]: '{not json' },
      }),
      now: NOW,
    });
    expect(p.warnings).toEqual([
      'invalid label operating.podopslifecycle.kusionstack.io',
      'lifecycle x: operating value "soon" is not a Unix-nanosecond timestamp',
      'lifecycle x: operating without operation-type; it cannot pass pre-check, and while it holds operating no other ID gets past operate (add the type, or remove the ID)',
      expect.stringContaining('pod.kusionstack.io/available-conditions is not JSON'),
      expect.stringContaining('spec.readinessGates lacks pod.kusionstack.io/service-ready'),
    ]);
  });

  it('an unreadable annotation never lets a lifecycle complete', () => {
    const labels = { [k('operated', 'a')]: '1', [k('doneOperationType', 'a')]: 'u', [k('postChecked', 'a')]: '2', [k('completing', 'a')]: '3' };
    const p = planReconcile({ pod: pod(labels, { gate: 'True', annotations: { [AVAILABLE_CONDITIONS_ANNOTATION]: '[' } }), now: NOW });
    expect(p.changed).toBe(false);
  });

  it('is idempotent: applying a plan and planning again with the same observations yields nothing', () => {
    const labels = { [k('operated', 'a')]: '1', [k('doneOperationType', 'a')]: 'u', [k('postChecked', 'a')]: '2', [k('completing', 'a')]: '3' };
    const annotations = { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { 'Service/ns/web': `${PROTECTION_FINALIZER_PREFIX}/y` } }) };
    const p = planReconcile({ pod: pod(labels, { gate: 'True', ready: true, annotations }), now: NOW });
    expect(p.changed).toBe(false);
  });
});

describe('podStateFromV1Pod', () => {
  it('takes what the protocol reads from a client-node Pod', async () => {
    const { podStateFromV1Pod } = await import('./pod-state.js');
    const state = podStateFromV1Pod({
      metadata: { name: 'p', labels: CONTROL, finalizers: ['f'], deletionTimestamp: new Date(0) },
      spec: { containers: [], readinessGates: [{ conditionType: SERVICE_READY_CONDITION }] },
      status: { conditions: [{ type: 'Ready', status: 'True' }, { type: SERVICE_READY_CONDITION, status: 'weird' }] },
    });
    expect(state).toEqual({
      labels: CONTROL,
      annotations: {},
      finalizers: ['f'],
      conditions: [{ type: 'Ready', status: 'True' }, { type: SERVICE_READY_CONDITION, status: 'Unknown' }],
      readinessGates: [SERVICE_READY_CONDITION],
      deleting: true,
    });
  });

  it('reports stuck states apart, so the handler emits them as Warning Events even when nothing moves', () => {
    const plan = planReconcile({ pod: pod({ [k('operating', 'x')]: '1' }, { ready: true, gate: 'True' }), now: NOW });
    expect(plan.stuck).toEqual([expect.stringContaining('operating without operation-type')]);
  });

  it('gives the gate back to a Pod that left the lifecycle with it False (scenario 6)', () => {
    const left = podState({ labels: { [k('preparing', 'x')]: '1' }, readinessGates: [SERVICE_READY_CONDITION], conditions: [{ type: SERVICE_READY_CONDITION, status: 'False' }] });
    const plan = planReconcile({ pod: left, now: NOW });
    expect(plan.changed).toBe(true);
    expect(plan.serviceReady).toMatchObject({ status: 'True', reason: 'NotControlled' });
    expect(plan.labels.set).toEqual({});
    expect(planReconcile({ pod: { ...left, conditions: [] }, now: NOW }).skipped).toBe('NotControlled');
  });
});
