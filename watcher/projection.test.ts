import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.js';
import { isMetadataOnly, keepFields, mergeProjections, ONLY_METADATA, project } from './projection.js';

const pod = (): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      namespace: 'ns',
      labels: { a: 'b' },
      annotations: { x: 'y' },
      managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } }],
    },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }], selector: { app: 'x' } },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], podIP: '10.0.0.1' },
  }) as KubeObject;

describe('project', () => {
  it('without a projection keeps the whole object but managedFields, and leaves the original alone', () => {
    const original = pod();
    const out = project(original, undefined) as Record<string, unknown> & KubeObject;
    expect('managedFields' in out.metadata).toBe(false);
    expect(out.metadata.labels).toEqual({ a: 'b' });
    expect(out.spec).toEqual(original.spec);
    expect(out.status).toEqual(original.status);
    expect('managedFields' in original.metadata).toBe(true);
  });

  it('metadata only keeps kind, apiVersion and metadata (labels, annotations, owners) and nothing else', () => {
    const out = project(pod(), ONLY_METADATA);
    expect(Object.keys(out).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
    expect(out.metadata).toEqual({ name: 'p', namespace: 'ns', labels: { a: 'b' }, annotations: { x: 'y' } });
  });

  it('keeps the named paths whole, skips absent ones, and never builds parents for what is absent', () => {
    const out = project(pod(), keepFields('spec.nodeName', 'status.conditions', 'status.containerStatuses', 'spec.missing.deep')) as Record<string, unknown>;
    expect(out.spec).toEqual({ nodeName: 'n1' });
    expect(out.status).toEqual({ conditions: [{ type: 'Ready', status: 'True' }] });
    const bare = project({ metadata: { name: 'q' } }, keepFields('spec.selector')) as Record<string, unknown>;
    expect(bare).toEqual({ metadata: { name: 'q' } });
  });
});

describe('mergeProjections', () => {
  it('is the union of what the triggers of one watch keep, or the whole object when one declared none', () => {
    expect(mergeProjections([keepFields('spec.selector'), ONLY_METADATA, keepFields('status.conditions', 'spec.selector')])).toEqual({ keep: ['spec.selector', 'status.conditions'] });
    expect(mergeProjections([ONLY_METADATA, undefined])).toBeUndefined();
    expect(mergeProjections([])).toBeUndefined();
    expect(isMetadataOnly(mergeProjections([ONLY_METADATA, ONLY_METADATA]))).toBe(true);
    expect(isMetadataOnly(mergeProjections([ONLY_METADATA, keepFields('spec')]))).toBe(false);
    expect(isMetadataOnly(undefined)).toBe(false);
  });
});
