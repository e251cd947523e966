import { describe, expect, it } from 'vitest';
import { InvalidConditionError, findCondition } from './conditions.js';
import { type ChildHealth, type StateEngineInput, type StateEngineResult, computeStatus } from './engine.js';
import { EngineStatusSchema, type Condition, type EngineStatus } from './schema.js';
import { Reason } from './vocabulary.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);

const healthy: ChildHealth[] = [
  { name: 'ServingGroups', state: 'Ready' },
  { name: 'Metrics', state: 'Ready' },
];

function run(input: Partial<StateEngineInput> & { now: Date }): StateEngineResult {
  return computeStatus({ generation: 1, children: healthy, ...input });
}

function get(result: StateEngineResult | EngineStatus, type: string): Condition {
  const conditions = 'status' in result ? result.status.conditions : result.conditions;
  const found = findCondition(conditions, type);
  if (found === undefined) throw new Error(`no ${type} condition`);
  return found;
}

/** A resource that reached Ready at T0. */
const readyAtT0 = run({ now: at(0) }).status;

describe('computeStatus: healthy', () => {
  it('is Ready with every parent and child condition True, stamped with the generation', () => {
    const result = computeStatus({ generation: 7, now: at(0), children: healthy });
    expect(result.status.phase).toBe('Ready');
    expect(result.status.observedGeneration).toBe(7);
    expect(result.terminal).toBe(false);
    expect(result.requeueAfterMs).toBeUndefined();
    expect(result.status.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'True', 'AllComponentsReady'],
      ['ConfigValid', 'True', 'ConfigurationValid'],
      ['AuthValid', 'True', 'AuthenticationValid'],
      ['DependenciesReachable', 'True', 'Reachable'],
      ['Stalled', 'False', 'Ready'],
      ['ServingGroupsReady', 'True', 'Ready'],
      ['MetricsReady', 'True', 'Ready'],
    ]);
    for (const c of result.status.conditions) {
      expect(c.observedGeneration).toBe(7);
      expect(c.lastTransitionTime).toBe('2026-03-01T12:00:00Z');
    }
    expect(EngineStatusSchema.safeParse(result.status).success).toBe(true);
  });

  it('is Ready with no children and no errors', () => {
    expect(computeStatus({ generation: 1, now: at(0) }).status.phase).toBe('Ready');
  });

  it('changes nothing when recomputed from its own output', () => {
    const again = run({ now: at(60), previous: readyAtT0 });
    expect(again.changed).toBe(false);
    expect(again.transitions).toEqual([]);
    expect(again.status).toEqual(readyAtT0);
  });

  it('reports every condition appearing on the first write, with no Event for healthy ones', () => {
    const first = run({ now: at(0) });
    expect(first.changed).toBe(true);
    expect(first.transitions.map((t) => t.type)).toContain('Ready');
    expect(first.transitions.filter((t) => t.eventType !== undefined)).toEqual([]);
  });
});

describe('computeStatus: which transitions call for an Event', () => {
  const events = (r: StateEngineResult) => r.transitions.filter((t) => t.eventType !== undefined).map((t) => [t.type, t.eventType]);

  it('a new resource on its way (Starting, Pending, capacity) gets no Warning', () => {
    expect(events(run({ now: at(0), children: [{ name: 'ServingGroups', state: 'Starting' }] }))).toEqual([]);
    expect(events(run({ now: at(0), children: [{ name: 'ServingGroups', state: 'Pending' }] }))).toEqual([]);
    expect(events(run({ now: at(0), errors: [{ class: 'Capacity', message: 'no GPUs', child: 'ServingGroups' }] }))).toEqual([]);
  });

  it('a new resource that is broken gets Warnings from its first status', () => {
    const result = run({ now: at(0), errors: [{ class: 'Spec', message: 'spec.replicas: must be >= 0', child: 'ServingGroups' }] });
    expect(events(result)).toEqual([
      ['Ready', 'Warning'],
      ['ConfigValid', 'Warning'],
      ['ServingGroupsReady', 'Warning'],
    ]);
    expect(events(run({ now: at(0), children: [{ name: 'Model', state: 'Degraded' }] }))).toEqual([
      ['Ready', 'Warning'],
      ['ModelReady', 'Warning'],
    ]);
  });

  it('becoming Ready after starting is a Normal event', () => {
    const starting = run({ now: at(0), children: [{ name: 'ServingGroups', state: 'Starting' }] });
    const ready = run({ now: at(30), previous: starting.status, children: [{ name: 'ServingGroups', state: 'Ready' }] });
    expect(events(ready)).toEqual([
      ['Ready', 'Normal'],
      ['ServingGroupsReady', 'Normal'],
    ]);
  });

  it('a Ready resource falling back to Starting is a Warning (readiness was lost)', () => {
    const back = run({ now: at(30), previous: readyAtT0, children: [{ name: 'ServingGroups', state: 'Starting' }, { name: 'Metrics', state: 'Ready' }] });
    expect(events(back)).toEqual([
      ['Ready', 'Warning'],
      ['ServingGroupsReady', 'Warning'],
    ]);
  });
});

describe('computeStatus: children', () => {
  it('is Starting while a child starts, with the child named in Ready', () => {
    const result = run({
      now: at(0),
      children: [
        { name: 'ServingGroups', state: 'Starting', reason: 'PodsNotReady', message: '1/3 pods ready' },
        { name: 'Metrics', state: 'Ready' },
      ],
    });
    expect(result.status.phase).toBe('Starting');
    expect(get(result, 'Ready')).toMatchObject({ status: 'False', reason: 'PodsNotReady', message: 'ServingGroups: 1/3 pods ready' });
    expect(get(result, 'ServingGroupsReady')).toMatchObject({ status: 'False', reason: 'PodsNotReady', message: '1/3 pods ready' });
    expect(get(result, 'Stalled').status).toBe('False');
  });

  it('takes the worst child: Pending beats Starting, Degraded beats Pending', () => {
    const phase = (...states: ChildHealth['state'][]) =>
      run({ now: at(0), children: states.map((state, i) => ({ name: `C${i}`, state })) }).status.phase;
    expect(phase('Ready', 'Starting', 'Pending')).toBe('Pending');
    expect(phase('Pending', 'Degraded')).toBe('Degraded');
    expect(phase('Degraded', 'NotAvailable')).toBe('NotAvailable');
    expect(phase('NotAvailable', 'Failed')).toBe('Failed');
    expect(phase('Ready', 'Unknown')).toBe('Starting');
  });

  it('uses the state as reason and message when the child gives none, and folds foreign reasons to CamelCase', () => {
    const result = run({
      now: at(0),
      children: [
        { name: 'Cache', state: 'Pending' },
        { name: 'Model', state: 'Degraded', reason: 'image pull-error' },
      ],
    });
    expect(get(result, 'CacheReady')).toMatchObject({ reason: 'Pending', message: 'Cache is Pending' });
    expect(get(result, 'ModelReady').reason).toBe('ImagePullError');
    expect(get(result, 'Ready').reason).toBe('ImagePullError');
  });

  it('reads a NotAvailable or Failed child as stalled, but not as terminal', () => {
    const result = run({ now: at(0), children: [{ name: 'Template', state: 'NotAvailable', reason: 'GPUNotAvailable' }] });
    expect(result.status.phase).toBe('NotAvailable');
    expect(get(result, 'Stalled')).toMatchObject({ status: 'True', reason: 'GPUNotAvailable' });
    expect(result.terminal).toBe(false);
  });

  it('rejects child names that would make an invalid condition type, and duplicates', () => {
    expect(() => run({ now: at(0), children: [{ name: 'servingGroups', state: 'Ready' }] })).toThrow(InvalidConditionError);
    expect(() =>
      run({ now: at(0), children: [{ name: 'A', state: 'Ready' }, { name: 'A', state: 'Ready' }] }),
    ).toThrow(InvalidConditionError);
  });
});

describe('computeStatus: error classes (seed 002 §3)', () => {
  it('spec error → ConfigValid=False, Failed, Stalled, terminal (no retry loop)', () => {
    const result = run({
      now: at(5),
      previous: readyAtT0,
      errors: [{ class: 'Spec', message: 'spec.template.roles[0].replicas: must be >= 0', child: 'ServingGroups' }],
    });
    expect(result.status.phase).toBe('Failed');
    expect(result.terminal).toBe(true);
    expect(result.requeueAfterMs).toBeUndefined();
    expect(get(result, 'ConfigValid')).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
      message: 'spec.template.roles[0].replicas: must be >= 0',
      lastTransitionTime: '2026-03-01T12:00:05Z',
    });
    expect(get(result, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(get(result, 'ServingGroupsReady')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(get(result, 'Stalled')).toMatchObject({ status: 'True', reason: 'InvalidSpec' });
    const events = result.transitions.filter((t) => t.eventType !== undefined).map((t) => [t.type, t.eventType]);
    expect(events).toEqual([
      ['Ready', 'Warning'],
      ['ConfigValid', 'Warning'],
      ['ServingGroupsReady', 'Warning'],
    ]);
  });

  it('a spec error may carry its own ConfigValid reason', () => {
    const result = run({ now: at(0), errors: [{ class: 'Spec', reason: 'InvalidScaleTargetRef', message: 'spec.scaleTargetRef.kind: must be Deployment' }] });
    expect(get(result, 'ConfigValid').reason).toBe('InvalidScaleTargetRef');
    expect(get(result, 'Ready').reason).toBe('InvalidSpec');
  });

  it('missing reference → ConfigValid=False ReferenceNotFound, Failed, terminal', () => {
    const result = run({ now: at(0), errors: [{ class: 'MissingReference', message: 'Deployment default/llama not found' }] });
    expect(result.status.phase).toBe('Failed');
    expect(result.terminal).toBe(true);
    expect(get(result, 'ConfigValid')).toMatchObject({ status: 'False', reason: 'ReferenceNotFound' });
    expect(get(result, 'Ready').reason).toBe('ReferenceNotFound');
  });

  it('auth error → AuthValid=False, Degraded (the seed; aim-engine says Failed), retried', () => {
    const result = run({
      now: at(0),
      errors: [{ class: 'Auth', message: 'registry credentials rejected (401)', child: 'Model' }],
    });
    expect(result.status.phase).toBe('Degraded');
    expect(result.terminal).toBe(false);
    expect(get(result, 'AuthValid')).toMatchObject({ status: 'False', reason: 'AuthFailed', message: 'registry credentials rejected (401)' });
    expect(get(result, 'Ready')).toMatchObject({ status: 'False', reason: 'AuthFailed' });
    expect(get(result, 'ModelReady')).toMatchObject({ status: 'False', reason: 'AuthFailed' });
    expect(get(result, 'ConfigValid').status).toBe('True');
    expect(get(result, 'Stalled').status).toBe('False');
  });

  it('capacity → Ready=False InsufficientCapacity, Starting; not an error', () => {
    const result = run({
      now: at(0),
      errors: [{ class: 'Capacity', message: '0/3 nodes have 8 free GPUs', child: 'ServingGroups' }],
    });
    expect(result.status.phase).toBe('Starting');
    expect(result.terminal).toBe(false);
    expect(get(result, 'Ready')).toMatchObject({ status: 'False', reason: 'InsufficientCapacity', message: '0/3 nodes have 8 free GPUs' });
    expect(get(result, 'ServingGroupsReady')).toMatchObject({ status: 'False', reason: 'InsufficientCapacity' });
    for (const type of ['ConfigValid', 'AuthValid', 'DependenciesReachable']) expect(get(result, type).status).toBe('True');
  });

  it('capacity does not hide a worse child', () => {
    const result = run({
      now: at(0),
      children: [{ name: 'Cache', state: 'Pending', reason: 'WaitingForVolume' }],
      errors: [{ class: 'Capacity', message: 'no GPUs' }],
    });
    expect(result.status.phase).toBe('Pending');
    expect(get(result, 'Ready').reason).toBe('WaitingForVolume');
  });

  it('several classes at once: every parent condition says its part, the worst sets the phase', () => {
    const result = run({
      now: at(0),
      errors: [
        { class: 'Auth', message: 'token expired' },
        { class: 'Spec', message: 'spec.modelID: required' },
        { class: 'Spec', message: 'spec.modelID: required' },
        { class: 'MissingReference', message: 'ConfigMap x not found' },
      ],
    });
    expect(result.status.phase).toBe('Failed');
    expect(get(result, 'ConfigValid')).toMatchObject({ status: 'False', reason: 'InvalidSpec', message: 'spec.modelID: required; ConfigMap x not found' });
    expect(get(result, 'AuthValid').status).toBe('False');
    expect(get(result, 'Ready').reason).toBe('InvalidSpec');
  });

  it('the most severe error speaks for a child named by several', () => {
    const result = run({
      now: at(0),
      errors: [
        { class: 'Capacity', message: 'no GPUs', child: 'ServingGroups' },
        { class: 'Spec', message: 'bad role', child: 'ServingGroups' },
        { class: 'Auth', message: 'denied', child: 'ServingGroups' },
      ],
    });
    expect(get(result, 'ServingGroupsReady')).toMatchObject({ reason: 'InvalidSpec', message: 'bad role' });
  });

  it('recovers: a fixed spec turns everything back to True with Normal events', () => {
    const failed = run({ now: at(0), errors: [{ class: 'Spec', message: 'spec.replicas: must be >= 0' }] }).status;
    const fixed = computeStatus({ generation: 2, now: at(30), previous: failed, children: healthy });
    expect(fixed.status.phase).toBe('Ready');
    expect(fixed.terminal).toBe(false);
    expect(get(fixed, 'ConfigValid')).toMatchObject({ status: 'True', lastTransitionTime: '2026-03-01T12:00:30Z', observedGeneration: 2 });
    expect(fixed.transitions.filter((t) => t.eventType === 'Normal').map((t) => t.type)).toEqual(['Ready', 'ConfigValid']);
  });
});

describe('computeStatus: connectivity grace period (aim-engine TestPipeline_GracePeriod_*)', () => {
  const unreachable = [{ class: 'Connectivity' as const, message: 'prometheus: connect ECONNREFUSED', child: 'Metrics' }];

  it('within: a Ready resource stays Ready, the unknown child keeps its last condition, re-check at the end', () => {
    const hiccup = run({ now: at(100), previous: readyAtT0, errors: unreachable });
    expect(hiccup.status.phase).toBe('Ready');
    expect(hiccup.requeueAfterMs).toBe(10_000);
    expect(hiccup.grace?.state).toBe('within');
    expect(get(hiccup, 'Ready')).toEqual(get(readyAtT0, 'Ready'));
    expect(get(hiccup, 'MetricsReady')).toEqual(get(readyAtT0, 'MetricsReady'));
    expect(get(hiccup, 'DependenciesReachable')).toMatchObject({
      status: 'False',
      reason: 'DependenciesUnreachable',
      message: 'prometheus: connect ECONNREFUSED',
      lastTransitionTime: '2026-03-01T12:01:40Z',
    });
    expect(hiccup.transitions.map((t) => [t.type, t.eventType])).toEqual([['DependenciesReachable', 'Warning']]);

    // Four seconds on, still failing: the anchor is the first failure, so 6 s remain and nothing changed.
    const still = run({ now: at(104), previous: hiccup.status, errors: unreachable });
    expect(still.status.phase).toBe('Ready');
    expect(still.requeueAfterMs).toBe(6_000);
    expect(still.changed).toBe(false);
  });

  it('after: the trouble outlived 10 s, so Degraded, Ready=False and the child Unknown', () => {
    const hiccup = run({ now: at(100), previous: readyAtT0, errors: unreachable });
    const after = run({ now: at(110), previous: hiccup.status, errors: unreachable });
    expect(after.status.phase).toBe('Degraded');
    expect(after.requeueAfterMs).toBeUndefined();
    expect(after.grace?.state).toBe('expired');
    expect(after.terminal).toBe(false);
    expect(get(after, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'DependenciesUnreachable',
      lastTransitionTime: '2026-03-01T12:01:50Z',
    });
    expect(get(after, 'MetricsReady')).toMatchObject({ status: 'False', reason: 'Unknown', message: 'prometheus: connect ECONNREFUSED' });
    expect(get(after, 'DependenciesReachable').lastTransitionTime).toBe('2026-03-01T12:01:40Z');
    expect(after.transitions.map((t) => [t.type, t.eventType])).toEqual([
      ['Ready', 'Warning'],
      ['MetricsReady', 'Warning'],
    ]);
  });

  it('recovering within the grace period: nothing visible flipped, DependenciesReachable comes back', () => {
    const hiccup = run({ now: at(100), previous: readyAtT0, errors: unreachable });
    const back = run({ now: at(105), previous: hiccup.status });
    expect(back.status.phase).toBe('Ready');
    expect(back.requeueAfterMs).toBeUndefined();
    expect(get(back, 'Ready').lastTransitionTime).toBe('2026-03-01T12:00:00Z');
    expect(back.transitions.map((t) => [t.type, t.to, t.eventType])).toEqual([['DependenciesReachable', 'True', 'Normal']]);
  });

  it('recovering after Degraded: Ready again with Normal events', () => {
    const hiccup = run({ now: at(100), previous: readyAtT0, errors: unreachable });
    const degraded = run({ now: at(110), previous: hiccup.status, errors: unreachable });
    const healed = run({ now: at(130), previous: degraded.status });
    expect(healed.status.phase).toBe('Ready');
    expect(healed.transitions.map((t) => [t.type, t.eventType])).toEqual([
      ['Ready', 'Normal'],
      ['DependenciesReachable', 'Normal'],
      ['MetricsReady', 'Normal'],
    ]);
  });

  it('a Starting resource stays Starting within the grace period and degrades after it', () => {
    const starting = run({ now: at(0), children: [{ name: 'ServingGroups', state: 'Starting' }] }).status;
    const within = run({ now: at(20), previous: starting, children: [{ name: 'ServingGroups', state: 'Unknown' }], errors: unreachable });
    expect(within.status.phase).toBe('Starting');
    expect(within.requeueAfterMs).toBe(10_000);
    expect(get(within, 'ServingGroupsReady')).toMatchObject({ status: 'False', reason: 'Unknown' });
    const after = run({ now: at(31), previous: within.status, children: [{ name: 'ServingGroups', state: 'Unknown' }], errors: unreachable });
    expect(after.status.phase).toBe('Degraded');
  });

  it('a Pending (or new) resource: informational, it stays Pending and never degrades', () => {
    const fresh = run({ now: at(0), errors: unreachable });
    expect(fresh.status.phase).toBe('Pending');
    expect(fresh.grace?.state).toBe('informational');
    expect(fresh.requeueAfterMs).toBeUndefined();
    expect(get(fresh, 'DependenciesReachable').status).toBe('False');
    expect(get(fresh, 'Ready')).toMatchObject({ status: 'False', reason: 'DependenciesUnreachable' });
    const minuteLater = run({ now: at(60), previous: fresh.status, errors: unreachable });
    expect(minuteLater.status.phase).toBe('Pending');
    expect(minuteLater.changed).toBe(false);
  });

  it('a general dependency failure (no child named) also degrades after the grace period', () => {
    const errors = [{ class: 'Connectivity' as const, message: 'model registry: 503' }];
    const within = run({ now: at(100), previous: readyAtT0, errors });
    expect(within.status.phase).toBe('Ready');
    expect(get(within, 'Ready').status).toBe('True');
    expect(run({ now: at(112), previous: within.status, errors }).status.phase).toBe('Degraded');
  });

  it('anchors on the persisted whole-second time: a re-check at the requeue time always finds the period over', () => {
    const firstSeen = new Date(T0 + 100_700);
    const hiccup = run({ now: firstSeen, previous: readyAtT0, errors: unreachable });
    expect(hiccup.requeueAfterMs).toBe(10_000);
    const recheck = run({ now: new Date(firstSeen.getTime() + hiccup.requeueAfterMs!), previous: hiccup.status, errors: unreachable });
    expect(recheck.status.phase).toBe('Degraded');
  });

  it('takes a more precise first-seen time from the caller', () => {
    const hiccup = run({ now: at(100), previous: readyAtT0, errors: unreachable });
    const result = run({
      now: at(105),
      previous: hiccup.status,
      errors: unreachable,
      connectivityTroubleSince: new Date(T0 + 99_500),
    });
    expect(result.requeueAfterMs).toBe(4_500);
  });

  it('honours a configured grace period', () => {
    const hiccup = run({ now: at(100), previous: readyAtT0, errors: unreachable, gracePeriodMs: 30_000 });
    expect(hiccup.requeueAfterMs).toBe(30_000);
    expect(run({ now: at(120), previous: hiccup.status, errors: unreachable, gracePeriodMs: 30_000 }).status.phase).toBe('Ready');
  });
});

describe('computeStatus: upstream conditions and generations', () => {
  const kthena: Condition = {
    type: 'Available',
    status: 'True',
    reason: 'AllGroupsReady',
    message: 'All Serving groups are ready',
    lastTransitionTime: '2026-02-01T00:00:00Z',
  };

  it('carries upstream conditions over untouched, in place', () => {
    const previous: EngineStatus = { ...readyAtT0, conditions: [kthena, ...(readyAtT0.conditions ?? [])] };
    const result = run({ now: at(10), previous, errors: [{ class: 'Auth', message: 'denied' }] });
    expect(result.status.conditions[0]).toEqual(kthena);
  });

  it('writes upstream conditions given in the same pass with the same rules', () => {
    const previous: EngineStatus = { ...readyAtT0, conditions: [kthena, ...(readyAtT0.conditions ?? [])] };
    const result = computeStatus({
      generation: 2,
      now: at(10),
      previous,
      children: healthy,
      upstreamConditions: [
        { type: 'Available', status: 'True', reason: 'AllGroupsReady', message: 'All Serving groups are ready' },
        { type: 'TargetResolved', status: 'True', reason: 'TargetFound' },
      ],
    });
    expect(get(result, 'Available')).toEqual({ ...kthena, observedGeneration: 2 });
    expect(get(result, 'TargetResolved')).toMatchObject({ status: 'True', observedGeneration: 2, lastTransitionTime: '2026-03-01T12:00:10Z' });
    expect(result.transitions.find((t) => t.type === 'TargetResolved')?.eventType).toBeUndefined();
  });

  it('refuses an upstream condition that would overwrite one of its own', () => {
    expect(() =>
      run({ now: at(0), upstreamConditions: [{ type: 'Ready', status: 'True', reason: 'Mine' }] }),
    ).toThrow(InvalidConditionError);
    expect(() =>
      run({ now: at(0), upstreamConditions: [{ type: 'MetricsReady', status: 'True', reason: 'Mine' }] }),
    ).toThrow(InvalidConditionError);
  });

  it('a new generation with the same health is a change (observedGeneration) but no transition', () => {
    const result = computeStatus({ generation: 2, now: at(50), previous: readyAtT0, children: healthy });
    expect(result.changed).toBe(true);
    expect(result.transitions).toEqual([]);
    expect(result.status.observedGeneration).toBe(2);
    for (const c of result.status.conditions) {
      expect(c.observedGeneration).toBe(2);
      expect(c.lastTransitionTime).toBe('2026-03-01T12:00:00Z');
    }
  });

  it('a reason/message-only change is a change to write but not a transition', () => {
    const starting = run({ now: at(0), children: [{ name: 'ServingGroups', state: 'Starting', message: '1/3 ready' }] });
    const progressed = run({ now: at(9), previous: starting.status, children: [{ name: 'ServingGroups', state: 'Starting', message: '2/3 ready' }] });
    expect(progressed.changed).toBe(true);
    expect(progressed.transitions).toEqual([]);
    expect(get(progressed, 'Ready').lastTransitionTime).toBe('2026-03-01T12:00:00Z');
  });

  it('ignores a previous phase it does not know', () => {
    const result = run({ now: at(0), previous: { phase: 'Running' } as unknown as EngineStatus, errors: [{ class: 'Connectivity', message: 'x' }] });
    expect(result.grace?.state).toBe('informational');
  });

  it('rejects a negative or fractional generation', () => {
    expect(() => computeStatus({ generation: -1, now: at(0) })).toThrow(RangeError);
    expect(() => computeStatus({ generation: 1.5, now: at(0) })).toThrow(RangeError);
  });

  it('uses CamelCase reasons everywhere it writes', () => {
    const inputs: Partial<StateEngineInput>[] = [
      { errors: [{ class: 'Spec', message: 'x' }] },
      { errors: [{ class: 'Auth', message: 'x' }] },
      { errors: [{ class: 'Capacity', message: 'x' }] },
      { errors: [{ class: 'Connectivity', message: 'x' }] },
      { errors: [{ class: 'MissingReference', message: 'x' }] },
      { children: [{ name: 'A', state: 'Unknown' }] },
    ];
    for (const input of inputs) {
      for (const c of run({ now: at(0), ...input }).status.conditions) expect(c.reason).toMatch(/^[A-Z][A-Za-z0-9]*$/);
    }
    for (const reason of Object.values(Reason)) expect(reason).toMatch(/^[A-Z][A-Za-z0-9]*$/);
  });
});
