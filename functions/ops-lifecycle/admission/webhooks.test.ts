import { describe, expect, it } from 'vitest';
import { admissionResponse } from '../../../runtime/webhook/admission-review.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, CONTROL_LABEL, nanosFromDate, perIdKey, permissionKey, SERVICE_READY_CONDITION } from '../protocol/index.js';
import { opsLifecycleWebhooks, readinessGatePatch, transitionsPatch } from './webhooks.js';

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

const T = '1700000000000000000';
const NOW = new Date(1_800_000_000_000);
const STAMP = '1800000000000000000';
const k = (l: Parameters<typeof perIdKey>[0], id = 'a') => perIdKey(l, id);
const GATED = [{ conditionType: SERVICE_READY_CONDITION }];
const withStatus = (p: ReturnType<typeof pod>, conditions: Array<{ type: string; status: string }>, finalizers: string[] = []) => ({
  ...p,
  metadata: { ...p.metadata, finalizers },
  status: { conditions },
});
const gateFalse = [{ type: SERVICE_READY_CONDITION, status: 'False' }, { type: 'Ready', status: 'True' }];
const update = (object: unknown, oldObject: unknown, subResource?: string) => ({ operation: 'UPDATE' as const, object, oldObject, ...(subResource ? { subResource } : {}) });
const labelsAfter = (patch: ReturnType<typeof transitionsPatch>) => (patch[0]?.value ?? undefined) as Record<string, string> | undefined;

describe('transitionsPatch (kuperator transitions in the same write)', () => {
  const begun = { ...controlled, [k('operating')]: T, [k('operationType')]: 'update' };
  const operate = { ...begun, [k('preChecked')]: T, [permissionKey('update')]: T, [k('operate')]: T };

  it('Begin: pre-check is stamped in the write that begins', () => {
    expect(labelsAfter(transitionsPatch(update(pod(begun), pod(controlled)), 'endpointslices', nanosFromDate(NOW)))).toEqual({ ...begun, [k('preCheck')]: STAMP });
  });

  it('Finish: operated, done-operation-type and post-check in the write that finishes; type and permission gone', () => {
    const finished: Record<string, string> = { ...operate };
    delete finished[k('operating')];
    expect(labelsAfter(transitionsPatch(update(pod(finished), pod(operate)), 'endpointslices', nanosFromDate(NOW)))).toEqual({
      ...controlled,
      [k('operated')]: STAMP,
      [k('doneOperationType')]: 'update',
      [k('postCheck')]: STAMP,
    });
  });

  it('Undo: every label of an undone ID and its orphaned permission go; other IDs stay', () => {
    const labels = { ...operate, [k('undoOperationType')]: 'update', [k('operating', 'b')]: T, [k('operationType', 'b')]: 'restart', [k('preCheck', 'b')]: T };
    expect(labelsAfter(transitionsPatch(update(pod(labels), pod(operate)), 'endpointslices', nanosFromDate(NOW)))).toEqual({
      ...controlled,
      [k('operating', 'b')]: T,
      [k('operationType', 'b')]: 'restart',
      [k('preCheck', 'b')]: T,
    });
  });

  it('changes nothing when nothing moves, and nothing for Pods not controlled', () => {
    const waiting = { ...begun, [k('preCheck')]: T };
    expect(transitionsPatch(update(pod(waiting), pod(waiting)), 'endpointslices', nanosFromDate(NOW))).toEqual([]);
    expect(transitionsPatch(update(pod({ [k('operating')]: T }), pod({})), 'endpointslices', nanosFromDate(NOW))).toEqual([]);
  });

  describe('operate, from what the write will store', () => {
    const preparing = { ...begun, [k('preChecked')]: T, [permissionKey('update')]: T, [k('preparing')]: T };
    const notReady = [{ type: SERVICE_READY_CONDITION, status: 'False' }, { type: 'Ready', status: 'False' }];

    it('gate mode: the pods/status write that sets service-ready False carries operate (kuperator)', () => {
      const out = labelsAfter(transitionsPatch(update(withStatus(pod(preparing, GATED), gateFalse), withStatus(pod(preparing, GATED), []), 'status'), 'gate', nanosFromDate(NOW)));
      expect(out?.[k('operate')]).toBe(STAMP);
      expect(out).not.toHaveProperty(k('preparing'));
    });

    it('an update of the Pod is judged by the stored status, not the status its client sent', () => {
      const stale = update(withStatus(pod(preparing, GATED), gateFalse), withStatus(pod(preparing, GATED), [{ type: SERVICE_READY_CONDITION, status: 'True' }]));
      expect(transitionsPatch(stale, 'gate', nanosFromDate(NOW))).toEqual([]);
    });

    it('ready mode: only once Ready is not True; a protection finalizer always holds', () => {
      const old = withStatus(pod(preparing, GATED), gateFalse);
      expect(transitionsPatch(update(withStatus(pod(preparing, GATED), gateFalse), old, 'status'), 'ready', nanosFromDate(NOW))).toEqual([]);
      expect(labelsAfter(transitionsPatch(update(withStatus(pod(preparing, GATED), notReady), old, 'status'), 'ready', nanosFromDate(NOW)))?.[k('operate')]).toBe(STAMP);
      const held = withStatus(pod(preparing, GATED), notReady, ['prot.podopslifecycle.kusionstack.io/lb']);
      expect(transitionsPatch(update(held, old, 'status'), 'ready', nanosFromDate(NOW))).toEqual([]);
    });

    it("a kubelet's pods/status write is never changed: NodeRestriction refuses a node's status write whose labels differ from the stored Pod", () => {
      const old = withStatus(pod(preparing, GATED), gateFalse);
      const kubelet = (userInfo: { username?: string; groups?: string[] }) => ({ ...update(withStatus(pod(preparing, GATED), notReady), old, 'status'), userInfo });
      expect(transitionsPatch(kubelet({ username: 'system:node:kwok-node-0', groups: ['system:nodes', 'system:authenticated'] }), 'ready', nanosFromDate(NOW))).toEqual([]);
      expect(transitionsPatch(kubelet({ username: 'someone', groups: ['system:nodes'] }), 'ready', nanosFromDate(NOW))).toEqual([]);
      expect(transitionsPatch(kubelet({ username: 'system:node:n1' }), 'gate', nanosFromDate(NOW))).toEqual([]);
      // Anyone else's status write (the reconciler's) still carries operate.
      expect(labelsAfter(transitionsPatch(kubelet({ username: 'system:serviceaccount:ripple:reconciler', groups: ['system:serviceaccounts'] }), 'ready', nanosFromDate(NOW)))?.[k('operate')]).toBe(STAMP);
      // A node's update of the Pod itself (not status) is not what NodeRestriction checks this way.
      expect(labelsAfter(transitionsPatch({ ...update(pod(begun), pod(controlled)), userInfo: { username: 'system:node:n1', groups: ['system:nodes'] } }, 'ready', nanosFromDate(NOW)))?.[k('preCheck')]).toBe(STAMP);
    });

    it('a CREATE is judged with no conditions: the API server drops the status a client sends with a new Pod', () => {
      const created = { operation: 'CREATE' as const, object: withStatus(pod(preparing, GATED), [{ type: SERVICE_READY_CONDITION, status: 'False' }]) };
      expect(transitionsPatch(created, 'gate', nanosFromDate(NOW))).toEqual([]);
    });

    it('endpointslices mode: never from a write, for a Pod with the gate (the reconciler lists the slices)', () => {
      const old = withStatus(pod(preparing, GATED), gateFalse);
      expect(transitionsPatch(update(withStatus(pod(preparing, GATED), notReady), old, 'status'), 'endpointslices', nanosFromDate(NOW))).toEqual([]);
    });
  });

  describe('completing', () => {
    const postChecked = { ...controlled, [k('operated')]: T, [k('doneOperationType')]: 'update', [k('postChecked')]: T };
    const completing = { ...postChecked, [k('completing')]: T };

    it('a write that adds completing is not cleaned up in that same write', () => {
      expect(transitionsPatch(update(pod(completing), pod({ ...postChecked, [k('postCheck')]: T })), 'endpointslices', nanosFromDate(NOW))).toEqual([]);
    });

    it('the next write cleans the round up once the expected finalizers are on the Pod', () => {
      const annotated = (p: ReturnType<typeof pod>, finalizers: string[]) => ({
        ...p,
        metadata: { ...p.metadata, finalizers, annotations: { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { 'LB/ns/lb': 'prot.podopslifecycle.kusionstack.io/lb' } }) } },
      });
      const before = annotated(pod(completing), []);
      expect(transitionsPatch(update(annotated(pod(completing), []), before, 'status'), 'endpointslices', nanosFromDate(NOW))).toEqual([]);
      expect(labelsAfter(transitionsPatch(update(annotated(pod(completing), ['prot.podopslifecycle.kusionstack.io/lb']), before), 'endpointslices', nanosFromDate(NOW)))).toEqual(controlled);
    });
  });
});

describe('opsLifecycleWebhooks', () => {
  it('select controlled Pods, have no side effects to declare, and answer a JSONPatch', async () => {
    expect(opsLifecycleWebhooks().map((w) => w.sideEffects ?? 'None')).toEqual(['None', 'None']);
    const [create, update] = opsLifecycleWebhooks();
    expect(create?.objectSelector).toEqual({ matchLabels: { [CONTROL_LABEL]: 'true' } });
    expect(create?.failurePolicy).toBe('Fail');
    expect(update?.failurePolicy).toBe('Ignore');
    const decision = await create?.admit(
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
