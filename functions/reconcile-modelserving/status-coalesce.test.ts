import { describe, expect, it } from 'vitest';
import { holdBackMs, STATUS_COALESCE_MS } from './status-coalesce.js';

const T0 = Date.parse('2026-11-23T19:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const progressing = (ready: number, message = 'ServingGroups progressing: [0 1]') => ({
  replicas: 2,
  availableReplicas: ready >= 2 ? 1 : 0,
  phase: 'Starting',
  observedGeneration: 1,
  roles: [{ name: 'prefill', replicas: 2, readyReplicas: ready, updatedReplicas: 2, ...(ready < 2 ? { notReady: ['ms-0/prefill-0'] } : {}) }],
  conditions: [
    { type: 'Progressing', status: 'True', reason: 'GroupProgressing', message, lastTransitionTime: iso(T0), observedGeneration: 1 },
    { type: 'Ready', status: 'False', reason: 'GroupProgressing', message, lastTransitionTime: iso(T0), observedGeneration: 1 },
  ],
});

describe('status coalescing', () => {
  it('holds back a write that only moves the counts of a rollout in progress, for what is left of the window', () => {
    const previous = { ...progressing(0), lastProgressTime: iso(T0) };
    const next = { ...progressing(1), lastProgressTime: iso(T0 + 300) };
    expect(holdBackMs(previous, next, T0 + 300)).toBe(STATUS_COALESCE_MS - 300);
    // A progress message of a condition is a count too.
    const fewer = { ...progressing(2, 'ServingGroups progressing: [0]'), lastProgressTime: iso(T0 + 300) };
    expect(holdBackMs(previous, fewer, T0 + 300)).toBe(STATUS_COALESCE_MS - 300);
  });

  it('writes at once once the window has passed, or with no rollout clock', () => {
    const previous = { ...progressing(0), lastProgressTime: iso(T0) };
    expect(holdBackMs(previous, { ...progressing(1), lastProgressTime: iso(T0 + STATUS_COALESCE_MS) }, T0 + STATUS_COALESCE_MS)).toBe(0);
    expect(holdBackMs(progressing(0), { ...progressing(1), lastProgressTime: iso(T0 + 300) }, T0 + 300)).toBe(0);
    expect(holdBackMs(undefined, { ...progressing(1), lastProgressTime: iso(T0 + 300) }, T0 + 300)).toBe(0);
    // The last write of a rollout clears the clock: never held back.
    expect(holdBackMs(previous, { ...progressing(2), lastProgressTime: null }, T0 + 300)).toBe(0);
  });

  it('writes at once what a user acts on: a condition status or reason, the phase, a generation, a role revision', () => {
    const previous = { ...progressing(0), lastProgressTime: iso(T0) };
    const at = T0 + 300;
    const base = { ...progressing(1), lastProgressTime: iso(at) };
    const [progressingCond, readyCond] = base.conditions;
    expect(holdBackMs(previous, { ...base, conditions: [progressingCond, { ...readyCond, status: 'True', reason: 'AllComponentsReady' }] }, at)).toBe(0);
    expect(holdBackMs(previous, { ...base, conditions: [progressingCond, { ...readyCond, reason: 'Unschedulable' }] }, at)).toBe(0);
    expect(holdBackMs(previous, { ...base, conditions: [progressingCond] }, at)).toBe(0);
    expect(holdBackMs(previous, { ...base, phase: 'Ready' }, at)).toBe(0);
    expect(holdBackMs(previous, { ...base, observedGeneration: 2 }, at)).toBe(0);
    expect(holdBackMs(previous, { ...base, roles: [{ ...base.roles[0], updatedReplicas: 1 }] }, at)).toBe(0);
    expect(holdBackMs(previous, { ...base, replicas: 3 }, at)).toBe(0);
  });
});
