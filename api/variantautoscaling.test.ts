import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { WVA_HELM_VA, WVA_SAMPLE_VAS } from '../test/fixtures/wva-samples.js';
import { generateCrd } from './crd.js';
import {
  parseVariantAutoscaling,
  VARIANT_AUTOSCALING_CRD,
  variantAutoscalingPrinterColumns,
  variantCostOf,
  type VariantAutoscaling,
} from './variantautoscaling.js';

// WVA's published sample manifests (config/samples, deploy/examples, the Helm chart rendered with
// example values). They must parse unchanged.
const UPSTREAM_SAMPLES = `${WVA_SAMPLE_VAS}\n---\n${WVA_HELM_VA}`;

function samples(): unknown[] {
  return parseAllDocuments(UPSTREAM_SAMPLES).map((d) => d.toJS() as unknown);
}

function mustParse(obj: unknown): VariantAutoscaling {
  const r = parseVariantAutoscaling(obj);
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.value;
}

const minimal = {
  apiVersion: 'llmd.ai/v1alpha1',
  kind: 'VariantAutoscaling',
  metadata: { name: 'v', namespace: 'ns' },
  spec: { scaleTargetRef: { kind: 'Deployment', name: 'd' }, modelID: 'm' },
};

describe('VariantAutoscaling schema', () => {
  it('parses every upstream sample manifest unchanged', () => {
    const docs = samples();
    expect(docs).toHaveLength(8);
    for (const doc of docs) {
      const r = parseVariantAutoscaling(doc);
      expect(r.ok, r.ok ? '' : r.errors.join('\n')).toBe(true);
    }
  });

  it('keeps the values written and applies the variantCost default', () => {
    const [premium, , , , , defaulted] = samples().map(mustParse);
    expect(premium?.spec).toEqual({
      scaleTargetRef: { kind: 'Deployment', name: 'llama-70b-premium-h100' },
      modelID: 'meta/llama-3.1-70b',
      variantCost: '80.0',
    });
    expect(premium?.metadata.labels?.['accelerator']).toBe('h100');
    expect(defaulted?.spec.variantCost).toBe('10.0');
    expect(variantCostOf(defaulted!)).toBe(10);
    expect(variantCostOf(premium!)).toBe(80);
  });

  it('rejects an empty modelID with a message naming spec.modelID', () => {
    const r = parseVariantAutoscaling({ ...minimal, spec: { ...minimal.spec, modelID: '' } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors).toHaveLength(1);
      expect(r.errors[0]).toMatch(/^spec\.modelID: modelID must not be empty/);
    }
  });

  it('requires scaleTargetRef.kind and .name and says what to set', () => {
    const r = parseVariantAutoscaling({ ...minimal, spec: { modelID: 'm', scaleTargetRef: {} } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors).toEqual([
        expect.stringMatching(/^spec\.scaleTargetRef\.kind: kind is required/),
        expect.stringMatching(/^spec\.scaleTargetRef\.name: name is required/),
      ]);
    }
  });

  it('requires modelID and scaleTargetRef', () => {
    const r = parseVariantAutoscaling({ ...minimal, spec: {} });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors.some((e) => e.startsWith('spec.modelID: modelID is required'))).toBe(true);
      expect(r.errors.some((e) => e.startsWith('spec.scaleTargetRef: '))).toBe(true);
    }
  });

  it.each([['ten'], ['-1'], ['1e3'], ['.5'], ['10.']])('rejects variantCost %s', (cost) => {
    const r = parseVariantAutoscaling({ ...minimal, spec: { ...minimal.spec, variantCost: cost } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toMatch(/^spec\.variantCost: variantCost must be a non-negative decimal/);
  });

  it('rejects an unquoted numeric variantCost and says to quote it', () => {
    const r = parseVariantAutoscaling({ ...minimal, spec: { ...minimal.spec, variantCost: 10 } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toBe('spec.variantCost: variantCost must be a quoted decimal string such as "10.0"');
  });

  it('rejects another apiVersion or kind', () => {
    const r = parseVariantAutoscaling({ ...minimal, apiVersion: 'llmd.ai/v1', kind: 'Deployment' });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors).toContain('apiVersion: apiVersion must be "llmd.ai/v1alpha1"');
      expect(r.errors).toContain('kind: kind must be "VariantAutoscaling"');
    }
  });

  it('accepts a status with numReplicas 0 and rejects negative replicas or a 1-letter accelerator', () => {
    const ok = parseVariantAutoscaling({
      ...minimal,
      status: {
        desiredOptimizedAlloc: { accelerator: 'A100', numReplicas: 0, lastRunTime: '2026-01-29T10:00:00Z' },
        actuation: { applied: true },
        conditions: [
          { type: 'TargetResolved', status: 'True', reason: 'TargetFound', message: 'Scale target Deployment d found', lastTransitionTime: '2026-01-29T10:00:00Z', observedGeneration: 1 },
        ],
      },
    });
    expect(ok.ok).toBe(true);
    const bad = parseVariantAutoscaling({ ...minimal, status: { desiredOptimizedAlloc: { accelerator: 'A', numReplicas: -1 } } });
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.errors).toEqual([
        'status.desiredOptimizedAlloc.accelerator: accelerator must be at least 2 characters',
        'status.desiredOptimizedAlloc.numReplicas: numReplicas must be 0 or more',
      ]);
    }
  });

  it('rejects a timestamp that is not RFC 3339', () => {
    const r = parseVariantAutoscaling({ ...minimal, status: { desiredOptimizedAlloc: { accelerator: 'A100', numReplicas: 1, lastRunTime: 'yesterday' } } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors).toEqual(['status.desiredOptimizedAlloc.lastRunTime: lastRunTime must be an RFC 3339 date-time such as 2026-01-29T12:00:00Z']);
    expect(parseVariantAutoscaling({ ...minimal, status: { desiredOptimizedAlloc: { accelerator: 'A100', numReplicas: 1, lastRunTime: '2026-01-29T12:00:00.5+02:00' } } }).ok).toBe(true);
  });

  it('rejects duplicate condition types and malformed conditions with indexed paths', () => {
    const cond = { type: 'MetricsAvailable', status: 'True', reason: 'MetricsFound', message: '', lastTransitionTime: '2026-01-29T10:00:00Z' };
    const r = parseVariantAutoscaling({ ...minimal, status: { conditions: [cond, { ...cond, status: 'Yes', reason: 'has space' }] } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors).toContain('status.conditions[1].status: status must be "True", "False" or "Unknown"');
      expect(r.errors).toContain('status.conditions[1].reason: reason must be CamelCase (letters, digits, _ , :)');
    }
    const dup = parseVariantAutoscaling({ ...minimal, status: { conditions: [cond, { ...cond, status: 'False' }] } });
    expect(dup.ok).toBe(false);
    if (!dup.ok) {
      expect(dup.errors).toEqual(['status.conditions[1].type: condition type MetricsAvailable appears more than once; keep one entry per type']);
    }
  });

  it('rejects label values that are not strings', () => {
    const r = parseVariantAutoscaling({ ...minimal, metadata: { name: 'v', labels: { replicas: 3 } } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toMatch(/^metadata\.labels\.replicas: values must be strings/);
  });

  it('treats an unreadable cost as the default', () => {
    const va = mustParse(minimal);
    expect(variantCostOf({ spec: { ...va.spec, variantCost: 'oops' } })).toBe(10);
  });
});

describe('VariantAutoscaling CRD', () => {
  const crd = generateCrd(VARIANT_AUTOSCALING_CRD);
  const version = crd.spec.versions[0]!;
  const root = version.schema.openAPIV3Schema;

  it('names the resource as upstream does, short name va, with a status subresource', () => {
    expect(crd.metadata.name).toBe('variantautoscalings.llmd.ai');
    expect(crd.spec.group).toBe('llmd.ai');
    expect(crd.spec.scope).toBe('Namespaced');
    expect(crd.spec.names).toEqual({
      kind: 'VariantAutoscaling',
      listKind: 'VariantAutoscalingList',
      plural: 'variantautoscalings',
      singular: 'variantautoscaling',
      shortNames: ['va'],
    });
    expect(version.name).toBe('v1alpha1');
    expect(version.subresources).toEqual({ status: {} });
  });

  it('has the upstream printer columns in order', () => {
    expect(variantAutoscalingPrinterColumns.map((c) => [c.name, c.type, c.jsonPath])).toEqual([
      ['Target', 'string', '.spec.scaleTargetRef.name'],
      ['Model', 'string', '.spec.modelID'],
      ['Optimized', 'string', '.status.desiredOptimizedAlloc.numReplicas'],
      ['MetricsReady', 'string', ".status.conditions[?(@.type=='MetricsAvailable')].status"],
      ['Age', 'date', '.metadata.creationTimestamp'],
    ]);
    expect(version.additionalPrinterColumns).toEqual(variantAutoscalingPrinterColumns);
  });

  it('carries the upstream validation and Kubernetes extensions', () => {
    const spec = root.properties!['spec']!;
    expect(spec.required).toEqual(['scaleTargetRef', 'modelID']);
    expect(spec.properties!['variantCost']).toMatchObject({ type: 'string', default: '10.0', pattern: '^\\d+(\\.\\d+)?$' });
    expect(spec.properties!['modelID']).toMatchObject({ type: 'string', minLength: 1 });
    expect(spec.properties!['scaleTargetRef']).toMatchObject({ 'x-kubernetes-map-type': 'atomic', required: ['kind', 'name'] });
    const status = root.properties!['status']!.properties!;
    expect(status['desiredOptimizedAlloc']).toMatchObject({ required: ['accelerator', 'numReplicas'] });
    expect(status['desiredOptimizedAlloc']!.properties!['numReplicas']).toMatchObject({ type: 'integer', minimum: 0 });
    expect(status['desiredOptimizedAlloc']!.properties!['lastRunTime']).toEqual({ description: 'When the optimizer last produced this allocation.', type: 'string', format: 'date-time' });
    expect(status['conditions']).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
  });
});
