import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../kube/object.js';
import { passes } from '../../watcher/predicates.js';
import { LIFECYCLE_OPT_IN_ANNOTATION } from './lifecycle.js';
import { modelServingChanged, podFactsChanged, serviceChanged } from './triggers.js';

function obj(meta: Partial<KubeObject['metadata']> = {}, rest: Record<string, unknown> = {}): KubeObject {
  return { metadata: { name: 'x', namespace: 'ns', resourceVersion: '1', generation: 1, ...meta }, ...rest };
}

const update = (old: KubeObject, object: KubeObject) => ({ type: 'update' as const, old, object });

describe('modelServingChanged', () => {
  it('passes spec changes, deletion and the annotations the function reads', () => {
    expect(passes(modelServingChanged, update(obj(), obj({ generation: 2 })))).toBe(true);
    expect(passes(modelServingChanged, update(obj(), obj({ deletionTimestamp: '2026-01-01T00:00:00Z' })))).toBe(true);
    expect(passes(modelServingChanged, update(obj(), obj({ annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'true' } })))).toBe(true);
    expect(passes(modelServingChanged, update(obj(), obj({ annotations: { 'scheduling.volcano.sh/queue-name': 'q' } })))).toBe(true);
    expect(passes(modelServingChanged, update(obj(), obj({ annotations: { 'ripple.dev/progress-deadline-seconds': '60' } })))).toBe(true);
  });

  it('drops status-only updates (its own status writes) and unrelated metadata', () => {
    expect(passes(modelServingChanged, update(obj(), obj({ resourceVersion: '2' }, { status: { replicas: 3 } })))).toBe(false);
    expect(passes(modelServingChanged, update(obj(), obj({ labels: { team: 'a' }, annotations: { note: 'x' } })))).toBe(false);
  });

  it('passes creates and deletes', () => {
    expect(passes(modelServingChanged, { type: 'create', object: obj() })).toBe(true);
    expect(passes(modelServingChanged, { type: 'delete', object: obj(), synthetic: false })).toBe(true);
  });
});

describe('podFactsChanged', () => {
  const pod = (status: Record<string, unknown>, meta: Partial<KubeObject['metadata']> = {}, spec: Record<string, unknown> = {}) =>
    obj(meta, { status, spec });
  const running = { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 't1', lastProbeTime: null }] };

  it('passes what a plan reads: phase, readiness, scheduling, restarts, labels, deletion', () => {
    expect(passes(podFactsChanged, update(pod({ phase: 'Pending' }), pod(running)))).toBe(true);
    expect(passes(podFactsChanged, update(pod(running), pod({ ...running, conditions: [{ type: 'Ready', status: 'False' }] })))).toBe(true);
    expect(passes(podFactsChanged, update(pod({ phase: 'Pending' }), pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] })))).toBe(true);
    expect(passes(podFactsChanged, update(pod(running), pod({ ...running, containerStatuses: [{ restartCount: 1 }] })))).toBe(true);
    expect(passes(podFactsChanged, update(pod(running), pod(running, { labels: { 'operate.podopslifecycle.kusionstack.io/modelserving': '1' } })))).toBe(true);
    expect(passes(podFactsChanged, update(pod(running), pod(running, { deletionTimestamp: 't' })))).toBe(true);
    expect(passes(podFactsChanged, update(pod({ phase: 'Pending' }), pod({ phase: 'Pending' }, {}, { nodeName: 'n1' })))).toBe(true);
  });

  it('drops churn a plan does not read', () => {
    expect(passes(podFactsChanged, update(pod(running), pod({ ...running, podIP: '10.0.0.2' }, { resourceVersion: '2' })))).toBe(false);
    const probed = { ...running, conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 't1', lastProbeTime: 't9' }] };
    expect(passes(podFactsChanged, update(pod(running), pod(probed)))).toBe(false);
  });
});

describe('serviceChanged', () => {
  it('passes label, owner and deletion changes only', () => {
    expect(passes(serviceChanged, update(obj(), obj({ labels: { a: 'b' } })))).toBe(true);
    expect(passes(serviceChanged, update(obj(), obj({ deletionTimestamp: 't' })))).toBe(true);
    expect(passes(serviceChanged, update(obj(), obj({ resourceVersion: '9' }, { spec: { ports: [] } })))).toBe(false);
  });
});
