import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../kube/object.js';
import { Resources, type ResourceRef } from '../../kube/resources.js';
import { passes } from '../../watcher/predicates.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, CONTROL_LABEL, SERVICE_READY_CONDITION } from './protocol/index.js';
import { endpointSliceStoppedRouting, lifecycleInputsChanged, mapEndpointSliceToPods, mapServiceToExpectingPods, serviceExpectationMayBeStale } from './triggers.js';

function pod(over: { labels?: Record<string, string>; annotations?: Record<string, string>; conditions?: Array<[string, string]>; podIP?: string } = {}): KubeObject {
  return {
    metadata: { name: 'p', namespace: 'ns', labels: { [CONTROL_LABEL]: 'true', ...over.labels }, annotations: over.annotations },
    status: { podIP: over.podIP, conditions: (over.conditions ?? []).map(([type, status]) => ({ type, status })) },
  };
}

describe('lifecycleInputsChanged', () => {
  const update = (old: KubeObject, object: KubeObject) => passes(lifecycleInputsChanged, { type: 'update', old, object });

  it('passes label, annotation and condition-status changes', () => {
    expect(update(pod(), pod({ labels: { x: '1' } }))).toBe(true);
    expect(update(pod(), pod({ annotations: { a: 'b' } }))).toBe(true);
    expect(update(pod({ conditions: [[SERVICE_READY_CONDITION, 'True']] }), pod({ conditions: [[SERVICE_READY_CONDITION, 'False']] }))).toBe(true);
    expect(update(pod({ conditions: [['Ready', 'True']] }), pod({ conditions: [['Ready', 'False']] }))).toBe(true);
  });

  it('drops updates the plan does not depend on, and deletes', () => {
    expect(update(pod({ podIP: '10.0.0.1' }), pod({ podIP: '10.0.0.2' }))).toBe(false);
    const terminating = { ...pod(), metadata: { ...pod().metadata, labels: {}, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    expect(passes(lifecycleInputsChanged, { type: 'delete', object: terminating, synthetic: false })).toBe(false);
  });

  it('passes the delete the selected watch reports when the control label is removed (the Pod is not terminating)', () => {
    expect(passes(lifecycleInputsChanged, { type: 'delete', object: pod(), synthetic: false })).toBe(true);
    expect(passes(lifecycleInputsChanged, { type: 'delete', object: pod(), synthetic: true })).toBe(false);
    expect(passes(lifecycleInputsChanged, { type: 'create', object: pod() })).toBe(true);
  });
});

describe('Service trigger', () => {
  const svc = (selector: Record<string, string>): KubeObject => ({ metadata: { name: 'web', namespace: 'ns' }, spec: { selector } });

  it('fires on delete and on a selector change only', () => {
    expect(passes(serviceExpectationMayBeStale, { type: 'delete', object: svc({ a: '1' }), synthetic: false })).toBe(true);
    expect(passes(serviceExpectationMayBeStale, { type: 'update', old: svc({ a: '1' }), object: svc({ a: '2' }) })).toBe(true);
    expect(passes(serviceExpectationMayBeStale, { type: 'update', old: svc({ a: '1' }), object: svc({ a: '1' }) })).toBe(false);
    expect(passes(serviceExpectationMayBeStale, { type: 'create', object: svc({ a: '1' }) })).toBe(false);
  });

  it('maps to the Pods that expect a finalizer on its behalf', () => {
    const expecting = { ...pod({ annotations: { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { 'Service/ns/web': 'prot.podopslifecycle.kusionstack.io/x' } }) } }) };
    expecting.metadata = { ...expecting.metadata, name: 'a' };
    const other = pod({ annotations: { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { 'Service/ns/db': 'f' } }) } });
    const broken = pod({ annotations: { [AVAILABLE_CONDITIONS_ANNOTATION]: '{' } });
    const list = (resource: ResourceRef, namespace?: string) =>
      resource.plural === Resources.pod.plural && namespace === 'ns' ? [expecting, other, broken] : [];
    expect(mapServiceToExpectingPods({ type: 'delete', object: svc({}), synthetic: false }, { list })).toEqual(['ns/a']);
  });
});

describe('EndpointSlice trigger', () => {
  const slice = (endpoints: Array<[string, boolean | undefined]>): KubeObject => ({
    metadata: { name: 'web-abc', namespace: 'ns' },
    endpoints: endpoints.map(([name, ready]) => ({ targetRef: { kind: 'Pod', name }, conditions: ready === undefined ? {} : { ready } })),
  });
  const named = (name: string) => ({ ...pod(), metadata: { ...pod().metadata, name } });
  const list = (resource: ResourceRef, namespace?: string) => (resource.plural === Resources.pod.plural && namespace === 'ns' ? [named('a'), named('b')] : []);

  it('fires when a slice stops routing to some Pod, or is deleted', () => {
    const update = (old: KubeObject, object: KubeObject) => passes(endpointSliceStoppedRouting, { type: 'update', old, object });
    expect(update(slice([['a', true]]), slice([['a', false]]))).toBe(true);
    expect(update(slice([['a', undefined]]), slice([]))).toBe(true);
    expect(update(slice([['a', false]]), slice([['a', true]]))).toBe(false);
    expect(update(slice([['a', true]]), slice([['a', true], ['b', true]]))).toBe(false);
    expect(passes(endpointSliceStoppedRouting, { type: 'create', object: slice([['a', true]]) })).toBe(false);
    expect(passes(endpointSliceStoppedRouting, { type: 'delete', object: slice([['a', true]]), synthetic: false })).toBe(true);
  });

  it('maps to the controlled Pods it stopped routing to', () => {
    expect(mapEndpointSliceToPods({ type: 'update', old: slice([['a', true], ['b', true], ['x', true]]), object: slice([['a', false], ['b', true]]) }, { list })).toEqual(['ns/a']);
    expect(mapEndpointSliceToPods({ type: 'delete', object: slice([['b', true], ['x', true]]), synthetic: false }, { list })).toEqual(['ns/b']);
  });
});
