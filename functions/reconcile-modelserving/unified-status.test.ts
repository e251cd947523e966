import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ModelServingStatus } from '../../api/modelserving.js';
import { computeStatus } from '../../status/engine.js';
import { StatusFixture } from '../../status/test-fixtures.js';
import { invalidSpecStatus, unifiedStatus } from './unified-status.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const cond = (type: string, status: 'True' | 'False', reason: string, message = '') => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: '2026-01-01T00:00:00Z',
  observedGeneration: 1,
});

function engine(status: ModelServingStatus, problems: string[] = [], pods: V1Pod[] = []) {
  const u = unifiedStatus(status, problems, pods);
  return { u, result: computeStatus({ ...u.input, generation: 1, now: NOW }) };
}

const get = (r: ReturnType<typeof engine>['result'], type: string) => r.status.conditions.find((c) => c.type === type);

describe('unifiedStatus', () => {
  it('Available → phase Ready and Ready=True, with Kthena fields and conditions carried beside', () => {
    const { u, result } = engine({ replicas: 2, availableReplicas: 2, updateRevision: 'r1', currentRevision: 'r1', conditions: [cond('Available', 'True', 'AllGroupsReady')] });
    expect(u.fields).toEqual({ replicas: 2, availableReplicas: 2, updateRevision: 'r1', currentRevision: 'r1', lastProgressTime: null });
    expect(result.status.phase).toBe('Ready');
    expect(get(result, 'Ready')?.status).toBe('True');
    expect(get(result, 'ServingGroupsReady')?.status).toBe('True');
    expect(get(result, 'Available')).toMatchObject({ status: 'True', reason: 'AllGroupsReady' });
    expect(get(result, 'ConfigValid')?.status).toBe('True');
  });

  it('a rollout or scale-up in progress → Starting, Ready=False with Kthena\'s reason and message', () => {
    const { result } = engine({
      replicas: 2,
      availableReplicas: 1,
      conditions: [cond('Available', 'False', 'GroupsUpdating', 'x'), cond('UpdateInProgress', 'True', 'GroupsUpdating', 'ServingGroups progressing: [1]; updated: [1]')],
    });
    expect(result.status.phase).toBe('Starting');
    expect(get(result, 'Ready')).toMatchObject({ status: 'False', reason: 'GroupsUpdating' });
    expect(get(result, 'ServingGroupsReady')?.message).toBe('ServingGroups progressing: [1]; updated: [1]');
    expect(get(result, 'Stalled')?.status).toBe('False');
  });

  it('pods nobody schedules → Pending with the planner\'s explanation', () => {
    const problem = '2 pod(s) have waited over 60s without being seen by scheduler "volcano"; is it running in this cluster? (spec.schedulerName)';
    const { result } = engine({ replicas: 1, availableReplicas: 0, conditions: [cond('Progressing', 'True', 'GroupProgressing')] }, [problem]);
    expect(result.status.phase).toBe('Pending');
    expect(get(result, 'ServingGroupsReady')).toMatchObject({ status: 'False', reason: 'PodsNotScheduled', message: problem });
  });

  it('pods the scheduler refused (Unschedulable) → Ready=False/InsufficientCapacity', () => {
    const pod: V1Pod = {
      metadata: { name: 'p' },
      status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.' }] },
    };
    const { result } = engine({ replicas: 1, availableReplicas: 0, conditions: [cond('Progressing', 'True', 'GroupProgressing')] }, [], [pod]);
    expect(result.status.phase).toBe('Starting');
    expect(get(result, 'Ready')).toMatchObject({ reason: 'InsufficientCapacity', message: '1 pod(s) cannot be scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.' });
  });

  it('an invalid spec → ConfigValid=False naming the fields, phase Failed, Stalled, terminal', () => {
    const u = invalidSpecStatus(['spec.a: x', 'spec.b: y']);
    const result = computeStatus({ ...u.input, generation: 3, now: NOW });
    expect(result.status.phase).toBe('Failed');
    expect(result.terminal).toBe(true);
    expect(get(result as ReturnType<typeof engine>['result'], 'ConfigValid')).toMatchObject({ status: 'False', reason: 'InvalidSpec', message: 'spec.a: x; spec.b: y' });
    expect(get(result as ReturnType<typeof engine>['result'], 'Stalled')?.status).toBe('True');
  });
});

describe('blocked work (issue 13 scenario 3)', () => {
  it('is Degraded with NameTooLong, not a spec failure', () => {
    const u = unifiedStatus(
      { conditions: [{ type: 'Progressing', status: 'True', reason: 'GroupProgressing', message: 'm', lastTransitionTime: 't' }] },
      [],
      [],
      [{ reason: 'NameTooLong', message: 'spec.replicas: too long' }],
    );
    expect(u.input.children).toEqual([{ name: 'ServingGroups', state: 'Degraded', reason: 'NameTooLong', message: 'spec.replicas: too long' }]);
    expect(u.input.errors).toEqual([]);
  });
});

describe('an invalid spec on a ModelServing that was Available (issue 13 scenario 9)', () => {
  it('turns Available (and the other Kthena conditions present) False beside phase Failed', () => {
    const previous = [cond('Available', 'True', 'AllGroupsReady'), cond('Progressing', 'False', 'AllGroupsReady')];
    const u = invalidSpecStatus(['spec.a: x'], previous);
    const result = computeStatus({ ...u.input, previous: { conditions: previous }, generation: 2, now: NOW });
    expect(result.status.phase).toBe('Failed');
    expect(get(result as ReturnType<typeof engine>['result'], 'Available')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(get(result as ReturnType<typeof engine>['result'], 'Progressing')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(get(result as ReturnType<typeof engine>['result'], 'UpdateInProgress')).toBeUndefined();
  });
});

describe('pod problems (issue 13 scenario 4, seed 002)', () => {
  const progressing = { conditions: [cond('Progressing', 'True', 'GroupProgressing', 'ServingGroups progressing: [0]')] };
  const waiting = (name: string, reason: string, message: string): V1Pod => ({
    metadata: { name },
    status: { phase: 'Pending', containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message } } }] },
  });

  it('a crash loop is named on ServingGroupsReady and Ready with the kubelet words', () => {
    const { result } = engine(progressing, [], [waiting('llm-0-a-0-0', 'CrashLoopBackOff', 'back-off 5m0s restarting failed container')]);
    expect(get(result, 'ServingGroupsReady')).toMatchObject({
      status: 'False',
      reason: 'CrashLoopBackOff',
      message: 'pod llm-0-a-0-0 container main: CrashLoopBackOff: back-off 5m0s restarting failed container',
    });
    expect(result.status.phase).toBe('Starting');
  });

  it('an image pull refused for credentials is AuthValid=False (phase Degraded); a missing image stays a pull problem', () => {
    const auth = engine(progressing, [], [waiting('p', 'ImagePullBackOff', 'pull access denied for private/vllm, repository does not exist or may require authorization')]);
    expect(get(auth.result, 'AuthValid')?.status).toBe('False');
    expect(auth.result.status.phase).toBe('Degraded');
    const slow = engine(progressing, [], [waiting('p', 'ErrImagePull', 'rpc error: code = NotFound desc = manifest unknown')]);
    expect(get(slow.result, 'ServingGroupsReady')?.reason).toBe('ErrImagePull');
    expect(get(slow.result, 'AuthValid')?.status).not.toBe('False');
  });

  it('a missing ConfigMap or Secret is a missing reference', () => {
    const { result } = engine(progressing, [], [waiting('p', 'CreateContainerConfigError', 'configmap "cfg" not found')]);
    expect(result.status.phase).toBe('Failed');
    expect(get(result, 'ServingGroupsReady')?.message).toContain('configmap "cfg" not found');
  });
});

describe('lost capacity (issue 13 scenario 4: Degraded)', () => {
  const progressing = { availableReplicas: 1, replicas: 2, conditions: [cond('Progressing', 'True', 'GroupProgressing', 'ServingGroups progressing: [1]')] };

  it('a Ready ModelServing that loses a group without a spec change is Degraded', () => {
    const u = unifiedStatus(progressing, [], [], [], { phase: 'Ready', observedGeneration: 3, generation: 3 });
    const r = computeStatus({ ...u.input, generation: 3, now: NOW });
    expect(r.status.phase).toBe('Degraded');
    expect(r.status.conditions.find((c) => c.type === 'ServingGroupsReady')).toMatchObject({ reason: 'ServingGroupsUnavailable' });
  });

  it('routine work (a new generation: rollout, scaling, an HPA) stays Starting', () => {
    const u = unifiedStatus(progressing, [], [], [], { phase: 'Ready', observedGeneration: 3, generation: 4 });
    expect(computeStatus({ ...u.input, generation: 4, now: NOW }).status.phase).toBe('Starting');
    const starting = unifiedStatus(progressing, [], [], [], { phase: 'Starting', observedGeneration: 4, generation: 4 });
    expect(computeStatus({ ...starting.input, generation: 4, now: NOW }).status.phase).toBe('Starting');
  });
});

describe('routine work emits Normal Events only (issue 13 scenario 5)', () => {
  const ready = { phase: 'Ready' as const, observedGeneration: 3, conditions: [cond('Ready', 'True', 'AllComponentsReady'), cond('ServingGroupsReady', 'True', 'AllGroupsReady')] };
  const scaling = { availableReplicas: 1, replicas: 2, conditions: [cond('Progressing', 'True', 'GroupProgressing', 'ServingGroups progressing: [1]')] };
  const eventsOf = (r: ReturnType<typeof computeStatus>) => r.transitions.filter((t) => t.eventType).map((t) => [t.type, t.eventType]);

  it('a scale or rollout (a new generation) turns Ready and ServingGroupsReady False with Normal Events', () => {
    const u = unifiedStatus(scaling, [], [], [], { phase: 'Ready', observedGeneration: 3, generation: 4 });
    const r = computeStatus({ ...u.input, generation: 4, now: NOW, previous: ready });
    expect(eventsOf(r)).toEqual([
      ['Ready', 'Normal'],
      ['ServingGroupsReady', 'Normal'],
    ]);
  });

  it('the same loss without a spec change is Degraded, with Warnings', () => {
    const u = unifiedStatus(scaling, [], [], [], { phase: 'Ready', observedGeneration: 3, generation: 3 });
    const r = computeStatus({ ...u.input, generation: 3, now: NOW, previous: ready });
    expect(eventsOf(r)).toEqual([
      ['Ready', 'Warning'],
      ['ServingGroupsReady', 'Warning'],
    ]);
  });

  it('a readiness loss in a later reconcile of the same rollout (its clock still runs) is Normal too', () => {
    // The status read is already of generation 4 (an earlier reconcile of this rollout wrote it while
    // still Ready); the rollout has not completed, so status.lastProgressTime is set.
    const midRollout = { ...scaling, lastProgressTime: '2026-01-01T00:00:00.000Z' };
    const u = unifiedStatus(midRollout, [], [], [], { phase: 'Ready', observedGeneration: 4, generation: 4 });
    const r = computeStatus({ ...u.input, generation: 4, now: NOW, previous: { ...ready, observedGeneration: 4 } });
    expect(r.status.phase).toBe('Starting');
    expect(eventsOf(r)).toEqual([
      ['Ready', 'Normal'],
      ['ServingGroupsReady', 'Normal'],
    ]);
  });

  it('a scale a quota refuses keeps its Warning: a classified error is something wrong', () => {
    const u = unifiedStatus(scaling, [], [], [], { phase: 'Ready', observedGeneration: 3, generation: 4 });
    const refused = { class: 'Capacity' as const, message: 'the API server refused pod x-1-main-0-0: exceeded quota: pods', child: 'ServingGroups' };
    const r = computeStatus({ ...u.input, errors: [...(u.input.errors ?? []), refused], generation: 4, now: NOW, previous: ready });
    expect(eventsOf(r)).toContainEqual(['Ready', 'Warning']);
  });

  it('a scale into a crash loop keeps its Warning', () => {
    const pod: V1Pod = { metadata: { name: 'x-1-main-0-0' }, status: { phase: 'Running', containerStatuses: [{ name: 'main', image: 'i', imageID: '', ready: false, restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off' } } }] } };
    const u = unifiedStatus(scaling, [], [pod], [], { phase: 'Ready', observedGeneration: 3, generation: 4 });
    expect(u.input.routine).toBeUndefined();
  });
});

describe('progress deadline (issue 13 scenario 4)', () => {
  const stuckMessage = 'ServingGroups x-0, x-1 have made no progress for 600s (progress deadline, annotation ripple.dev/progress-deadline-seconds)';
  const stuck: ModelServingStatus = {
    replicas: 2,
    availableReplicas: 0,
    conditions: [cond('UpdateInProgress', 'True', 'GroupsUpdating', 'ServingGroups progressing: [0 1]; updated: [0 1]'), cond('Progressing', 'False', 'ProgressDeadlineExceeded', stuckMessage)],
  };
  const unschedulable: V1Pod = {
    metadata: { name: 'x-0-main-0-0' },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector." }] },
  };

  it('is Degraded and Stalled, Ready=False/ProgressDeadlineExceeded, naming the stuck groups and why', () => {
    const u = unifiedStatus(stuck, [], [unschedulable], [], { phase: 'Starting', observedGeneration: 4, generation: 4 });
    const r = computeStatus({ ...u.input, generation: 4, now: NOW });
    expect(r.status.phase).toBe('Degraded');
    expect(get(r, 'Ready')).toMatchObject({ status: 'False', reason: 'ProgressDeadlineExceeded' });
    expect(get(r, 'Stalled')).toMatchObject({ status: 'True', reason: 'ProgressDeadlineExceeded' });
    expect(get(r, 'ServingGroupsReady')?.message).toBe(`${stuckMessage}; 1 pod(s) cannot be scheduled: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.`);
  });

  it('once it moves again it is Starting, not Degraded for lost capacity (the rollout is not done)', () => {
    const moving: ModelServingStatus = { ...stuck, lastProgressTime: '2026-01-01T00:00:00.000Z', conditions: [cond('UpdateInProgress', 'True', 'GroupsUpdating', 'ServingGroups progressing: [1]; updated: [0 1]'), cond('Progressing', 'False', 'GroupsUpdating')] };
    const u = unifiedStatus(moving, [], [], [], { phase: 'Degraded', observedGeneration: 4, generation: 4 });
    expect(computeStatus({ ...u.input, generation: 4, now: NOW }).status.phase).toBe('Starting');
  });

  it('says so with one Warning, when the deadline first passes', () => {
    const before: ModelServingStatus = { conditions: [cond('UpdateInProgress', 'True', 'GroupsUpdating'), cond('Progressing', 'False', 'GroupsUpdating')] };
    // Handed to writeStatus, which sends it when the status read did not have the reason yet.
    expect(unifiedStatus(stuck, [], []).conditionEvents).toEqual([
      { condition: 'Progressing', reason: 'ProgressDeadlineExceeded', event: { type: 'Warning', reason: 'ProgressDeadlineExceeded', message: stuckMessage } },
    ]);
    expect(unifiedStatus(before, [], []).conditionEvents).toBeUndefined();
  });

  describe('its Warning goes through the status outbox, as transition Events do (at least once, only if written)', () => {
    const before: ModelServingStatus = { replicas: 2, availableReplicas: 0, conditions: [cond('UpdateInProgress', 'True', 'GroupsUpdating'), cond('Progressing', 'False', 'GroupsUpdating')] };
    const warnings = (f: StatusFixture) => f.emitted.filter((e) => e.reason === 'ProgressDeadlineExceeded' && e.message === stuckMessage);
    const write = (f: StatusFixture, s: ModelServingStatus) => {
      const u = unifiedStatus(s, [], [], [], { phase: 'Starting', observedGeneration: 1, generation: 1 });
      return f.reconcile(u.input, u.fields, { conditionEvents: u.conditionEvents ?? [] });
    };

    it('an emit that fails after the status write is sent by the next reconcile, once', async () => {
      const f = new StatusFixture({ nowMs: NOW.getTime() });
      await write(f, before);
      f.failEmit = true;
      f.nowMs += 600_000;
      const failed = await write(f, stuck);
      expect(failed.written).toBe(true);
      expect(failed.eventsPending).toBeGreaterThan(0);
      expect(warnings(f)).toEqual([]);
      f.failEmit = false;
      f.nowMs += 5_000;
      await write(f, stuck);
      expect(warnings(f)).toMatchObject([{ type: 'Warning', source: 'modelserving-controller', involvedObject: { kind: 'ModelServing', name: 'llama' } }]);
      f.nowMs += 5_000;
      await write(f, stuck);
      expect(warnings(f)).toHaveLength(1);
      expect(f.outbox.entries.size).toBe(0);
    });

    it('a write that lost its conflict announces nothing; the retry that writes it announces it once', async () => {
      const f = new StatusFixture({ nowMs: NOW.getTime() });
      await write(f, before);
      f.failPatch = true;
      f.nowMs += 600_000;
      await expect(write(f, stuck)).rejects.toThrow('409');
      expect(warnings(f)).toEqual([]);
      f.failPatch = false;
      await write(f, stuck);
      expect(warnings(f)).toHaveLength(1);
    });
  });

  it('removes lastProgressTime once the spec is rolled out (null removes a status field)', () => {
    expect(unifiedStatus({ lastProgressTime: '2026-01-01T00:00:00.000Z', conditions: [cond('Available', 'True', 'AllGroupsReady')] }, [], []).fields.lastProgressTime).toBe('2026-01-01T00:00:00.000Z');
    expect(unifiedStatus({ conditions: [cond('Available', 'True', 'AllGroupsReady')] }, [], []).fields.lastProgressTime).toBeNull();
  });
});

