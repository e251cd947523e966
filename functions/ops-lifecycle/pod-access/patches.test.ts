import { describe, expect, it } from 'vitest';
import { SERVICE_READY_CONDITION } from '../protocol/index.js';
import { conditionPatch, deletePreconditions, metadataPatch } from './patches.js';

describe('metadataPatch', () => {
  it('carries the resourceVersion precondition with the label and annotation changes (null deletes)', () => {
    expect(
      metadataPatch('42', {
        labels: { set: { a: '1' }, remove: ['b'] },
        annotations: { set: {}, remove: ['c'] },
      }),
    ).toEqual({ metadata: { resourceVersion: '42', labels: { a: '1', b: null }, annotations: { c: null } } });
  });

  it('replaces the finalizer list whole (safe only because of the precondition)', () => {
    expect(metadataPatch('7', { finalizers: [] })).toEqual({ metadata: { resourceVersion: '7', finalizers: [] } });
  });

  it('is undefined when there is nothing to write, so no write is made', () => {
    expect(metadataPatch('7', { labels: { set: {}, remove: [] }, annotations: { set: {}, remove: [] } })).toBeUndefined();
  });
});

describe('conditionPatch', () => {
  it('sends only the service-ready condition (merged by type) with the precondition', () => {
    const condition = { type: SERVICE_READY_CONDITION, status: 'False', reason: 'LifecycleInProgress', message: 'updated by PodOpsLifecycle', lastTransitionTime: '2024-06-04T12:58:05Z' } as const;
    expect(conditionPatch('9', condition)).toEqual({ metadata: { resourceVersion: '9' }, status: { conditions: [condition] } });
  });
});

describe('deletePreconditions', () => {
  it('pins the instance and the version that was judged deletable', () => {
    expect(deletePreconditions({ uid: 'u', resourceVersion: '3' })).toEqual({
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { uid: 'u', resourceVersion: '3' },
    });
  });
});
