import { describe, expect, it } from 'vitest';
import { isKubeObject, kubeObjectSchema, listSchema, parseKubeObject } from './object.js';

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'p',
    namespace: 'ns',
    uid: 'u',
    resourceVersion: '12',
    generation: 1,
    labels: { a: 'b' },
    annotations: { c: 'd' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'ou', controller: true, blockOwnerDeletion: true }],
    finalizers: ['f'],
    creationTimestamp: '2026-11-27T00:00:00Z',
    deletionTimestamp: '2026-11-27T00:00:01Z',
    managedFields: [{ manager: 'm' }],
  },
  spec: { nodeName: 'n' },
  status: { phase: 'Running' },
};

const meta = (over: Record<string, unknown>) => ({ ...pod, metadata: { ...pod.metadata, ...over } });

/** Objects the schema takes and objects it refuses, field by field. */
const corpus: unknown[] = [
  pod,
  { metadata: { name: 'bare' } },
  { metadata: { name: '' } },
  meta({ labels: {} }),
  meta({ ownerReferences: [] }),
  // Refused:
  null,
  'pod',
  [],
  {},
  { metadata: null },
  { metadata: [] },
  { metadata: { namespace: 'ns' } },
  { metadata: { name: 3 } },
  { ...pod, apiVersion: 1 },
  { ...pod, kind: null },
  meta({ namespace: 1 }),
  meta({ uid: null }),
  meta({ resourceVersion: 12 }),
  meta({ generation: '1' }),
  meta({ generation: null }),
  meta({ labels: { a: 1 } }),
  meta({ labels: [] }),
  meta({ labels: null }),
  meta({ annotations: { c: null } }),
  meta({ ownerReferences: {} }),
  meta({ ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'o' }] }),
  meta({ ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'u', controller: 'yes' }] }),
  meta({ ownerReferences: [null] }),
  meta({ finalizers: 'f' }),
  meta({ finalizers: [1] }),
  meta({ creationTimestamp: 0 }),
  meta({ deletionTimestamp: null }),
];

describe('isKubeObject (kubeObjectSchema checked in place)', () => {
  it('gives the schema’s verdict on every object of the corpus', () => {
    for (const [i, raw] of corpus.entries()) {
      expect(isKubeObject(raw), `corpus[${i}]: ${JSON.stringify(raw)}`).toBe(kubeObjectSchema.safeParse(raw).success);
    }
    // The corpus covers both verdicts.
    expect(corpus.filter(isKubeObject).length).toBe(5);
  });

  it('parseKubeObject hands back what the schema would, the same object when it holds, the schema’s error when not', () => {
    const ok = parseKubeObject(pod);
    expect(ok.success && ok.data).toBe(pod);
    expect(ok.success && ok.data).toEqual(kubeObjectSchema.parse(pod));
    const bad = parseKubeObject({ metadata: { namespace: 'ns' } });
    expect(bad.success).toBe(false);
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join('.'))).toEqual(['metadata.name']);
  });

  it('a list reports a bad item under its index, and takes a null item list as empty', () => {
    const bad = listSchema.safeParse({ metadata: {}, items: [pod, { metadata: { name: 5 } }] });
    expect(bad.success).toBe(false);
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join('.'))).toEqual(['items.1.metadata.name']);
    expect(listSchema.parse({ metadata: {}, items: null }).items).toEqual([]);
    expect(listSchema.parse({ metadata: { resourceVersion: '9' }, items: [pod] }).items).toEqual([pod]);
  });
});
