import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.js';
import { mapToControllerOwner, mapToSelf } from './mappers.js';

const ctx = { list: () => [] };
const pod = (owner?: { apiVersion: string; kind: string; name: string; controller?: boolean }): KubeObject => ({
  metadata: { name: 'p', namespace: 'ns', ownerReferences: owner ? [{ uid: 'u', ...owner }] : undefined },
});

describe('mappers', () => {
  it('maps an object to itself', () => {
    expect(mapToSelf({ type: 'create', object: pod() }, ctx)).toEqual(['ns/p']);
  });
  it('maps to the controller owner by group and kind, any version', () => {
    const m = mapToControllerOwner({ group: 'workload.serving.volcano.sh', kind: 'ModelServing' });
    const owned = pod({ apiVersion: 'workload.serving.volcano.sh/v1beta9', kind: 'ModelServing', name: 'ms', controller: true });
    expect(m({ type: 'create', object: owned }, ctx)).toEqual(['ns/ms']);
    expect(m({ type: 'create', object: pod({ apiVersion: 'apps/v1', kind: 'ModelServing', name: 'x', controller: true }) }, ctx)).toEqual([]);
    expect(m({ type: 'create', object: pod({ apiVersion: 'workload.serving.volcano.sh/v1alpha1', kind: 'ModelServing', name: 'x' }) }, ctx)).toEqual([]);
  });
  it('on update maps both the old and the new owner', () => {
    const m = mapToControllerOwner({ group: 'apps', kind: 'ReplicaSet' });
    const a = pod({ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'a', controller: true });
    const b = pod({ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'b', controller: true });
    expect(m({ type: 'update', old: a, object: b }, ctx).sort()).toEqual(['ns/a', 'ns/b']);
  });
});
