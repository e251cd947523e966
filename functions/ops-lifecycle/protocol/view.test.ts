import { describe, expect, it } from 'vitest';
import { expectationStatus, expectedFinalizersSatisfied, isServiceExpectationStale, parseAvailableConditions, serializeAvailableConditions } from './available-conditions.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, CONTROL_LABEL, Label, perIdKey as k, permissionKey as perm } from './keys.js';
import { desiredServiceReady, serviceReadyWrite, withServiceReadyGate } from './readiness-gate.js';
import { parseLifecycleView } from './view.js';

const NOW = 1_717_505_885_197_871_195n;

describe('parseLifecycleView', () => {
  it('types each ID: stage, phase, type, timestamps', () => {
    const v = parseLifecycleView({
      [CONTROL_LABEL]: 'true',
      [k('operating', 'a')]: '100',
      [k('operationType', 'a')]: 'update',
      [k('preChecked', 'a')]: '101',
      [k('operate', 'a')]: '102',
      [perm('update')]: '101',
      [k('operated', 'b')]: '200',
      [k('doneOperationType', 'b')]: 'restart',
      [k('completing', 'b')]: '201',
      [k('postChecked', 'b')]: '202',
      [Label.preparingToDelete]: '1',
    });
    expect(v.controlled).toBe(true);
    expect(v.lifecycles.map((e) => [e.id, e.stage, e.phase, e.type, e.operating])).toEqual([
      ['a', 'operate', 'Operating', 'update', true],
      ['b', 'completing', 'Completing', 'restart', false],
    ]);
    expect(v.lifecycles[0]?.timestamps).toEqual({ operating: 100n, preChecked: 101n, operate: 102n });
    expect(v.phase).toBe('Operating');
    expect(v.permissions).toEqual(new Map([['update', 101n]]));
    expect(v.preparingToDelete).toBe(true);
    expect(v.problems).toEqual([]);
  });

  it('phase with no lifecycle follows service-available', () => {
    expect(parseLifecycleView({ [Label.serviceAvailable]: '1' }).phase).toBe('ServiceAvailable');
    expect(parseLifecycleView({}).phase).toBe('NotServiceAvailable');
  });

  it('the least advanced ID sets the Pod phase', () => {
    const v = parseLifecycleView({ [k('operating', 'a')]: '1', [k('operationType', 'a')]: 'u', [k('completing', 'b')]: '1', [k('operated', 'b')]: '1' });
    expect(v.phase).toBe('Preparing');
  });

  it('reports values that are not timestamps or types, without failing', () => {
    const v = parseLifecycleView({ [k('operating', 'a')]: '-1', [k('operationType', 'a')]: 'has space' });
    expect(v.problems).toEqual([
      'lifecycle a: operating value "-1" is not a Unix-nanosecond timestamp',
      'lifecycle a: operationType value "has space" is not a valid type',
    ]);
    expect(v.lifecycles[0]?.stage).toBe('begun');
  });

  it('rejects timestamps beyond int64', () => {
    expect(parseLifecycleView({ [k('operating', 'a')]: '9999999999999999999', [k('operationType', 'a')]: 'u' }).problems).toHaveLength(1);
  });
});

describe('desiredServiceReady', () => {
  const gate = (labels: Record<string, string>) => desiredServiceReady(parseLifecycleView(labels))?.status;
  it('True with no lifecycle; left as it is with stay-offline, False once a stay-offline lifecycle completes', () => {
    expect(gate({})).toBe('True');
    expect(gate({ [Label.stayOffline]: 'true' })).toBeUndefined();
    expect(gate({ [Label.stayOffline]: 'true', [k('operated', 'a')]: '1', [k('doneOperationType', 'a')]: 'u', [k('postChecked', 'a')]: '1', [k('completing', 'a')]: '1' })).toBe('False');
  });
  it('unchanged while IDs are only in pre-check', () => {
    expect(gate({ [k('operating', 'a')]: '1', [k('operationType', 'a')]: 'u', [k('preCheck', 'a')]: '1' })).toBeUndefined();
  });
  it('False from preparing through post-checked, True at completing', () => {
    const base = { [k('operated', 'a')]: '1', [k('doneOperationType', 'a')]: 'u' };
    expect(gate({ [k('operating', 'a')]: '1', [k('operationType', 'a')]: 'u', [k('preChecked', 'a')]: '1', [k('preparing', 'a')]: '1' })).toBe('False');
    expect(gate({ [k('operating', 'a')]: '1', [k('operationType', 'a')]: 'u', [k('operate', 'a')]: '1' })).toBe('False');
    expect(gate(base)).toBe('False');
    expect(gate({ ...base, [k('postChecked', 'a')]: '1' })).toBe('False');
    expect(gate({ ...base, [k('postChecked', 'a')]: '1', [k('completing', 'a')]: '1' })).toBe('True');
  });
  it('False while any ID is out of service, even if another completes (#248)', () => {
    const completingA = { [k('operated', 'a')]: '1', [k('doneOperationType', 'a')]: 'u', [k('completing', 'a')]: '1' };
    expect(gate({ ...completingA, [k('operating', 'b')]: '1', [k('operationType', 'b')]: 'r', [k('preparing', 'b')]: '1' })).toBe('False');
    expect(gate({ ...completingA, [k('operationType', 'b')]: 'r', [k('operate', 'b')]: '1' })).toBe('False');
    expect(gate({ ...completingA, [k('operating', 'b')]: '1', [k('operationType', 'b')]: 'r', [k('preCheck', 'b')]: '1' })).toBe('True');
  });
});

describe('serviceReadyWrite', () => {
  it('writes only on a change of status', () => {
    expect(serviceReadyWrite('True', { status: 'True', reason: 'NoLifecycle' }, NOW)).toBeUndefined();
    expect(serviceReadyWrite('True', undefined, NOW)).toBeUndefined();
    expect(serviceReadyWrite('True', { status: 'False', reason: 'LifecycleInProgress' }, NOW)?.event.message).toBe('update service readiness gate to: False');
  });
});

describe('withServiceReadyGate', () => {
  it('appends the gate once', () => {
    expect(withServiceReadyGate(undefined)).toEqual([{ conditionType: 'pod.kusionstack.io/service-ready' }]);
    const gates = [{ conditionType: 'x' }, { conditionType: 'pod.kusionstack.io/service-ready' }];
    expect(withServiceReadyGate(gates)).toEqual(gates);
  });
});

describe('available-conditions', () => {
  const anno = (v: unknown) => ({ [AVAILABLE_CONDITIONS_ANNOTATION]: typeof v === 'string' ? v : JSON.stringify(v) });
  it('parses, tolerates null, rejects garbage', () => {
    expect(parseAvailableConditions({})).toEqual({ ok: true, value: undefined });
    expect(parseAvailableConditions(anno('null'))).toEqual({ ok: true, value: {} });
    expect(parseAvailableConditions(anno({ expectedFinalizers: { a: 1 } })).ok).toBe(false);
    expect(parseAvailableConditions(anno('{')).ok).toBe(false);
  });
  it('satisfied when absent, or when every expected finalizer is present', () => {
    expect(expectedFinalizersSatisfied({ annotations: {}, finalizers: [] })).toBe(true);
    expect(expectedFinalizersSatisfied({ annotations: anno({ expectedFinalizers: { a: 'f' } }), finalizers: ['f'] })).toBe(true);
    expect(expectedFinalizersSatisfied({ annotations: anno({ expectedFinalizers: { a: 'f' } }), finalizers: [] })).toBe(false);
    expect(expectedFinalizersSatisfied({ annotations: anno({ expectedFinalizers: { a: 'f' } }), finalizers: [] }, new Set(['a']))).toBe(true);
    expect(expectationStatus({ annotations: anno('{'), finalizers: [] }).readable).toBe(false);
  });
  it('serialises with sorted keys and omits an empty map', () => {
    expect(serializeAvailableConditions({ expectedFinalizers: { b: '2', a: '1' } })).toBe('{"expectedFinalizers":{"a":"1","b":"2"}}');
    expect(serializeAvailableConditions({ expectedFinalizers: {} })).toBe('{}');
  });
  it('a Service expectation is stale when the Service is gone or no longer selects the Pod', () => {
    expect(isServiceExpectationStale(undefined, {})).toBe(true);
    expect(isServiceExpectationStale({ selector: { app: 'web' } }, { app: 'web', x: '1' })).toBe(false);
    expect(isServiceExpectationStale({ selector: { app: 'web' } }, { app: 'api' })).toBe(true);
    expect(isServiceExpectationStale({}, { app: 'api' })).toBe(false);
  });
});
