import { describe, expect, it } from 'vitest';
import { annotatedScalerEvents } from '../triggers.js';
import { passes } from '../../../watcher/predicates.js';
import { mergeAnnotatedVariants, parseAnnotatedScaler, type AnnotatedVariant } from './annotations.js';

const scaler = (name: string, annotations: Record<string, string>, ref: Record<string, string> = { kind: 'Deployment', name: 'llama' }) => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}`, annotations },
  spec: { scaleTargetRef: ref },
});
const managed = { 'llm-d.ai/managed': 'true', 'llm-d.ai/model-id': 'meta/llama' };

describe('parseAnnotatedScaler (upstream internal/annotations)', () => {
  it('a managed HPA is a variant named after it, scaling its scaleTargetRef; cost defaults to 10.0', () => {
    const r = parseAnnotatedScaler('HorizontalPodAutoscaler', scaler('llama-hpa', managed, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'llama' }));
    expect(r).toMatchObject({ ok: true, variant: { va: { metadata: { name: 'llama-hpa', namespace: 'ns' }, spec: { modelID: 'meta/llama', variantCost: '10.0', scaleTargetRef: { kind: 'Deployment', name: 'llama' } } }, source: { kind: 'HorizontalPodAutoscaler', apiVersion: 'autoscaling/v2', uid: 'uid-llama-hpa' } } });
  });

  it('managed must be exactly "true"; a deleting one is skipped', () => {
    expect(parseAnnotatedScaler('HorizontalPodAutoscaler', scaler('a', { ...managed, 'llm-d.ai/managed': 'True' }))).toEqual({ ok: false, skipped: 'not-managed' });
    expect(parseAnnotatedScaler('HorizontalPodAutoscaler', { ...scaler('a', managed), metadata: { ...scaler('a', managed).metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } })).toEqual({ ok: false, skipped: 'deleting' });
  });

  it('model-id required; variant-cost numeric and non-negative', () => {
    expect(parseAnnotatedScaler('HorizontalPodAutoscaler', scaler('a', { 'llm-d.ai/managed': 'true' }))).toMatchObject({ ok: false, error: 'required annotation llm-d.ai/model-id is missing or empty' });
    expect(parseAnnotatedScaler('HorizontalPodAutoscaler', scaler('a', { ...managed, 'llm-d.ai/variant-cost': 'cheap' }))).toMatchObject({ ok: false, error: expect.stringContaining('must be a numeric string') });
    expect(parseAnnotatedScaler('HorizontalPodAutoscaler', scaler('a', { ...managed, 'llm-d.ai/variant-cost': '-1' }))).toMatchObject({ ok: false, error: expect.stringContaining('non-negative') });
    expect(parseAnnotatedScaler('ScaledObject', scaler('a', { ...managed, 'llm-d.ai/variant-cost': '2.5' }))).toMatchObject({ ok: true, variant: { va: { spec: { variantCost: '2.5' } } } });
  });

  it("a ScaledObject's scaleTargetRef defaults to an apps/v1 Deployment, as KEDA's does", () => {
    expect(parseAnnotatedScaler('ScaledObject', scaler('so', managed, { name: 'llama' }))).toMatchObject({ ok: true, variant: { va: { spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'llama' } } } } });
  });
});

describe('mergeAnnotatedVariants', () => {
  const v = (kind: 'HorizontalPodAutoscaler' | 'ScaledObject', name: string, target: string): AnnotatedVariant => {
    const r = parseAnnotatedScaler(kind, scaler(name, managed, { kind: 'Deployment', name: target }));
    if (!r.ok) throw new Error('bad fixture');
    return r.variant;
  };

  it('a VariantAutoscaling wins over an annotated scaler of the same target; a ScaledObject over an HPA (KEDA’s own HPA inherits its annotations)', () => {
    const va = { metadata: { name: 'va', namespace: 'ns' }, spec: { scaleTargetRef: { kind: 'Deployment', name: 'a' }, modelID: 'm', variantCost: '10.0' } };
    const r = mergeAnnotatedVariants([va], [v('HorizontalPodAutoscaler', 'hpa-a', 'a'), v('HorizontalPodAutoscaler', 'keda-hpa-so-b', 'b'), v('ScaledObject', 'so-b', 'b'), v('HorizontalPodAutoscaler', 'hpa-c', 'c')]);
    expect(r.variants.map((x) => x.source.name)).toEqual(['so-b', 'hpa-c']);
    expect(r.shadowed.map((x) => [x.variant.source.name, x.by])).toEqual([
      ['hpa-a', 'VariantAutoscaling va'],
      ['keda-hpa-so-b', 'ScaledObject so-b'],
    ]);
  });
});

describe('annotatedScalerEvents (the HPA / ScaledObject trigger)', () => {
  const obj = (annotations: Record<string, string>, generation = 1) => ({ metadata: { name: 'h', namespace: 'ns', annotations, generation, resourceVersion: '1' } });
  it('create/delete of a managed one; an update that adds, removes or changes the annotations or the spec; not a status update', () => {
    expect(passes(annotatedScalerEvents, { type: 'create', object: obj(managed) })).toBe(true);
    expect(passes(annotatedScalerEvents, { type: 'create', object: obj({}) })).toBe(false);
    expect(passes(annotatedScalerEvents, { type: 'delete', object: obj(managed), synthetic: false })).toBe(true);
    expect(passes(annotatedScalerEvents, { type: 'update', old: obj(managed), object: obj({ ...managed, 'llm-d.ai/managed': 'false' }) })).toBe(true);
    expect(passes(annotatedScalerEvents, { type: 'update', old: obj(managed, 1), object: obj(managed, 2) })).toBe(true);
    expect(passes(annotatedScalerEvents, { type: 'update', old: obj(managed), object: { metadata: { ...obj(managed).metadata, resourceVersion: '2' } } })).toBe(false);
    expect(passes(annotatedScalerEvents, { type: 'update', old: obj({}), object: obj({ x: 'y' }) })).toBe(false);
  });
});
