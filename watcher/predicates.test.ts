import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.js';
import type { WatchEvent } from './events.js';
import {
  and, annotationsChanged, deletionStarted, generationChanged, labelsChanged, labelSelector, nameIs, not, onlyEvents, or, passes, resourceVersionChanged,
} from './predicates.js';

const o = (meta: Partial<KubeObject['metadata']> = {}): KubeObject => ({ metadata: { name: 'a', namespace: 'ns', resourceVersion: '1', generation: 1, ...meta } });
const upd = (old: KubeObject, object: KubeObject): WatchEvent => ({ type: 'update', old, object });

describe('predicates', () => {
  it('generationChanged passes spec changes and blocks status/metadata-only updates', () => {
    expect(passes(generationChanged, upd(o(), o({ generation: 2, resourceVersion: '2' })))).toBe(true);
    expect(passes(generationChanged, upd(o(), o({ resourceVersion: '2' })))).toBe(false);
    expect(passes(generationChanged, { type: 'create', object: o() })).toBe(true);
  });
  it('resourceVersion, labels and annotations predicates compare old against new', () => {
    expect(passes(resourceVersionChanged, upd(o(), o()))).toBe(false);
    expect(passes(resourceVersionChanged, upd(o(), o({ resourceVersion: '2' })))).toBe(true);
    expect(passes(labelsChanged, upd(o({ labels: { a: '1' } }), o({ labels: { a: '1' } })))).toBe(false);
    expect(passes(labelsChanged, upd(o({ labels: { a: '1' } }), o({ labels: { a: '2' } })))).toBe(true);
    expect(passes(annotationsChanged, upd(o(), o({ annotations: { x: 'y' } })))).toBe(true);
  });
  it('onlyEvents blocks the event kinds not named', () => {
    const p = onlyEvents('create', 'delete');
    expect(passes(p, { type: 'create', object: o() })).toBe(true);
    expect(passes(p, upd(o(), o({ generation: 5 })))).toBe(false);
    expect(passes(p, { type: 'delete', object: o(), synthetic: true })).toBe(true);
    expect(passes(p, { type: 'generic', object: o() })).toBe(false);
  });
  it('deletionStarted passes only the update that sets deletionTimestamp', () => {
    expect(passes(deletionStarted, upd(o(), o({ deletionTimestamp: '2026-01-01T00:00:00Z' })))).toBe(true);
    const deleting = o({ deletionTimestamp: '2026-01-01T00:00:00Z' });
    expect(passes(deletionStarted, upd(deleting, deleting))).toBe(false);
  });
  it('label selector, name match and And/Or/Not compose', () => {
    const sel = labelSelector({ app: 'x' });
    expect(passes(sel, { type: 'create', object: o({ labels: { app: 'x', b: 'c' } }) })).toBe(true);
    expect(passes(sel, { type: 'create', object: o({ labels: { app: 'y' } }) })).toBe(false);
    const named = nameIs('a', 'ns');
    const ev: WatchEvent = { type: 'create', object: o({ labels: { app: 'y' } }) };
    expect(passes(and(sel, named), ev)).toBe(false);
    expect(passes(or(sel, named), ev)).toBe(true);
    expect(passes(not(sel), ev)).toBe(true);
  });
});
