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

  it('indexes by namespace: a lookup returns that namespace only and an emptied namespace leaves no trace', () => {
    const s = new ObjectStore();
    const at = (ns: string, name: string, rv = '1'): KubeObject => ({ metadata: { name, namespace: ns, resourceVersion: rv, uid: `${ns}-${name}` } });
    for (let i = 0; i < 50; i++) s.apply('ADDED', at('big', `o${i}`));
    s.apply('ADDED', at('small', 'x'));
    s.apply('ADDED', { metadata: { name: 'node-1', resourceVersion: '1' } });
    expect(s.list('small').map((o) => o.metadata.name)).toEqual(['x']);
    expect(s.list('big')).toHaveLength(50);
    expect(s.list('none')).toEqual([]);
    expect(s.list()).toHaveLength(52);
    expect(s.get('small/x')?.metadata.name).toBe('x');
    expect(s.get('node-1')?.metadata.name).toBe('node-1');
    // The answer is a copy: a caller sorting or filtering it cannot change the store.
    s.list('small').pop();
    expect(s.list('small')).toHaveLength(1);
    s.apply('DELETED', at('small', 'x', '2'));
    expect(s.list('small')).toEqual([]);
    expect(s.size).toBe(51);
    expect(s.get('small/x')).toBeUndefined();
  });

  it('a streamed relist diffs page by page against the store and sweeps what no page carried at the end', () => {
    const s = new ObjectStore();
    s.replace([obj('keep', '1'), obj('change', '1'), obj('gone', '1'), obj('recreated', '1', 'u1')]);
    const relist = s.beginRelist();
    // Page 1: the store already holds the new version of `change`, and nothing is deleted yet.
    expect(relist.add(obj('keep', '1'))).toEqual([]);
    expect(relist.add(obj('change', '2'))).toMatchObject([{ type: 'update', old: { metadata: { resourceVersion: '1' } } }]);
    expect(s.get('ns/change')?.metadata.resourceVersion).toBe('2');
    expect(s.get('ns/gone')).toBeDefined();
    // Page 2.
    expect(relist.add(obj('recreated', '7', 'u2')).map((e) => e.type)).toEqual(['delete', 'create']);
    expect(relist.add(obj('new', '5')).map((e) => e.type)).toEqual(['create']);
    const swept = relist.finish();
    expect(swept).toMatchObject([{ type: 'delete', synthetic: true, object: { metadata: { name: 'gone' } } }]);
    expect(s.list().map((o) => o.metadata.name).sort()).toEqual(['change', 'keep', 'new', 'recreated']);
    expect(s.size).toBe(4);
  });

  it('an empty relist (the resource went away) deletes everything, synthetically', () => {
    const s = new ObjectStore();
    s.replace([obj('a', '1'), { metadata: { name: 'b', namespace: 'other', resourceVersion: '1' } }]);
    expect(s.replace([]).map((e) => (e.type === 'delete' && e.synthetic ? e.object.metadata.name : 'unexpected')).sort()).toEqual(['a', 'b']);
    expect(s.size).toBe(0);
    expect(s.list()).toEqual([]);
  });
});
