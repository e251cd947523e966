import { describe, expect, it } from 'vitest';
import { admissionResponse } from '../../../runtime/webhook/admission-review.js';
import { CONTROL_LABEL, perIdKey, permissionKey, SERVICE_READY_CONDITION } from '../protocol/index.js';
import { opsLifecycleWebhooks, readinessGatePatch, undoPatch } from './webhooks.js';

const pod = (labels: Record<string, string>, readinessGates?: Array<{ conditionType: string }>) => ({
  metadata: { labels },
  spec: { containers: [{ name: 'c', image: 'i' }], ...(readinessGates ? { readinessGates } : {}) },
});
const controlled = { [CONTROL_LABEL]: 'true' };

describe('readinessGatePatch', () => {
  it('adds the list, or appends to it, for controlled Pods without the gate', () => {
    expect(readinessGatePatch(pod(controlled))).toEqual([{ op: 'add', path: '/spec/readinessGates', value: [{ conditionType: SERVICE_READY_CONDITION }] }]);
    expect(readinessGatePatch(pod(controlled, [{ conditionType: 'x' }]))).toEqual([{ op: 'add', path: '/spec/readinessGates/-', value: { conditionType: SERVICE_READY_CONDITION } }]);
  });
  it('leaves Pods with the gate, and Pods not controlled, alone', () => {
    expect(readinessGatePatch(pod(controlled, [{ conditionType: SERVICE_READY_CONDITION }]))).toEqual([]);
    expect(readinessGatePatch(pod({ app: 'a' }))).toEqual([]);
    expect(readinessGatePatch({ junk: true })).toEqual([]);
  });
});

describe('undoPatch (kuperator Undo applied in the same write)', () => {
  it('clears every label of an undone ID and its orphaned permission; other IDs stay', () => {
    const labels = {
      ...controlled,
      [perIdKey('operating', 'a')]: '1',
      [perIdKey('operationType', 'a')]: 'update',
      [perIdKey('preChecked', 'a')]: '1',
      [permissionKey('update')]: '1',
      [perIdKey('undoOperationType', 'a')]: 'update',
      [perIdKey('operating', 'b')]: '2',
      [perIdKey('operationType', 'b')]: 'restart',
    };
    expect(undoPatch(pod(labels))).toEqual([
      { op: 'replace', path: '/metadata/labels', value: { ...controlled, [perIdKey('operating', 'b')]: '2', [perIdKey('operationType', 'b')]: 'restart' } },
    ]);
  });
  it('changes nothing without an undo label', () => {
    expect(undoPatch(pod({ ...controlled, [perIdKey('operating', 'a')]: '1', [perIdKey('operationType', 'a')]: 'update' }))).toEqual([]);
  });
});

describe('opsLifecycleWebhooks', () => {
  it('select controlled Pods, have no side effects to declare, and answer a JSONPatch', () => {
    const [create, update] = opsLifecycleWebhooks();
    expect(create?.objectSelector).toEqual({ matchLabels: { [CONTROL_LABEL]: 'true' } });
    expect(create?.failurePolicy).toBe('Fail');
    expect(update?.failurePolicy).toBe('Ignore');
    const decision = create?.admit(
      { uid: 'u', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, operation: 'CREATE', object: pod(controlled) },
      new Date(0),
    );
    const review = admissionResponse('u', decision ?? { allowed: false, message: 'none' });
    const response = review.response as { allowed: boolean; patchType: string; patch: string };
    expect(response.allowed).toBe(true);
    expect(response.patchType).toBe('JSONPatch');
    expect(JSON.parse(Buffer.from(response.patch, 'base64').toString())).toEqual(readinessGatePatch(pod(controlled)));
  });
});
