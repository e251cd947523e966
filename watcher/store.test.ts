import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.js';
import { ObjectStore } from './store.js';

const obj = (name: string, rv: string, uid = `uid-${name}`): KubeObject => ({
  metadata: { name, namespace: 'ns', resourceVersion: rv, uid },
});

describe('ObjectStore', () => {
  it('turns ADDED/MODIFIED/DELETED into create/update/delete with the old object on updates', () => {
    const s = new ObjectStore();
    expect(s.apply('ADDED', obj('a', '1'))?.type).toBe('create');
    const upd = s.apply('MODIFIED', obj('a', '2'));
    expect(upd).toMatchObject({ type: 'update', old: { metadata: { resourceVersion: '1' } }, object: { metadata: { resourceVersion: '2' } } });
    expect(s.apply('DELETED', obj('a', '3'))).toMatchObject({ type: 'delete', synthetic: false });
    expect(s.size).toBe(0);
  });

  it('ignores a MODIFIED whose resourceVersion is equal (compared for equality only)', () => {
    const s = new ObjectStore();
    s.apply('ADDED', obj('a', '10'));
    expect(s.apply('MODIFIED', obj('a', '10'))).toBeUndefined();
    // "9" after "10" is still a change: versions are never ordered.
    expect(s.apply('MODIFIED', obj('a', '9'))?.type).toBe('update');
  });

  it('a relist yields synthetic deletes for vanished objects, creates for new ones, updates for changed ones', () => {
    const s = new ObjectStore();
    s.replace([obj('keep', '1'), obj('change', '1'), obj('gone', '1'), obj('recreated', '1', 'u1')]);
    const events = s.replace([obj('keep', '1'), obj('change', '2'), obj('new', '5'), obj('recreated', '7', 'u2')]);
    const summary = events.map((e) => `${e.type}:${e.object.metadata.name}${e.type === 'delete' && e.synthetic ? '(synthetic)' : ''}`).sort();
    expect(summary).toEqual(['create:new', 'create:recreated', 'delete:gone(synthetic)', 'delete:recreated(synthetic)', 'update:change']);
    expect(s.list().map((o) => o.metadata.name).sort()).toEqual(['change', 'keep', 'new', 'recreated']);
  });
});
