import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.js';
import { appendFolded, fold, foldAll } from './coalesce.js';
import type { WatchEvent } from './events.js';

const obj = (rv: string, uid = 'u1'): KubeObject => ({ metadata: { name: 'a', namespace: 'ns', resourceVersion: rv, uid } });
const rvs = (events: WatchEvent[]) => events.map((e) => `${e.type}:${e.type === 'update' ? `${e.old.metadata.resourceVersion}>` : ''}${e.object.metadata.resourceVersion}`);

describe('fold (coalescing one key\'s undelivered events)', () => {
  it('create then updates is one create of the newest object', () => {
    expect(rvs(foldAll([{ type: 'create', object: obj('1') }, { type: 'update', old: obj('1'), object: obj('2') }, { type: 'update', old: obj('2'), object: obj('3') }]))).toEqual(['create:3']);
  });

  it('updates fold into one update from the first old object to the newest, so old/new predicates compare the right pair', () => {
    const folded = foldAll([
      { type: 'update', old: obj('1'), object: obj('2') },
      { type: 'update', old: obj('2'), object: obj('3') },
      { type: 'update', old: obj('3'), object: obj('4') },
    ]);
    expect(rvs(folded)).toEqual(['update:1>4']);
  });

  it('anything then a delete is the delete, with its synthetic flag', () => {
    expect(fold({ type: 'update', old: obj('1'), object: obj('2') }, { type: 'delete', object: obj('3'), synthetic: true })).toEqual({ type: 'delete', object: obj('3'), synthetic: true });
    expect(rvs(foldAll([{ type: 'create', object: obj('1') }, { type: 'delete', object: obj('2'), synthetic: false }]))).toEqual(['delete:2']);
  });

  it('a delete is never folded into the new object that reuses the name, and a recreated object stays apart', () => {
    const events = foldAll([
      { type: 'update', old: obj('1'), object: obj('2') },
      { type: 'delete', object: obj('3'), synthetic: false },
      { type: 'create', object: obj('4', 'u2') },
      { type: 'update', old: obj('4', 'u2'), object: obj('5', 'u2') },
    ]);
    expect(rvs(events)).toEqual(['delete:3', 'create:5']);
    expect(events[0]!.object.metadata.uid).toBe('u1');
  });

  it('events of another uid are not folded together even without a delete between them', () => {
    expect(fold({ type: 'update', old: obj('1'), object: obj('2') }, { type: 'update', old: obj('2'), object: obj('3', 'u2') })).toBeUndefined();
  });

  it('generic events are left as they are', () => {
    expect(appendFolded([{ type: 'generic', object: obj('1') }], { type: 'update', old: obj('1'), object: obj('2') })).toHaveLength(2);
  });
});
