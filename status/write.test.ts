import { describe, expect, it, vi } from 'vitest';
import { findCondition } from './conditions.js';
import type { ChildHealth } from './engine.js';
import { StatusFixture } from './test-fixtures.js';
import { PENDING_EVENTS_RETRY_MS, readEngineStatus } from './write.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');

class Fixture extends StatusFixture {
  constructor() {
    super({ nowMs: T0 });
  }
}

const ready: ChildHealth[] = [{ name: 'ServingGroups', state: 'Ready' }];
const starting: ChildHealth[] = [{ name: 'ServingGroups', state: 'Starting' }];

describe('writeStatus', () => {
  it('writes the first status with the resourceVersion read; a new, progressing resource emits nothing', async () => {
    const f = new Fixture();
    const result = await f.reconcile({ children: starting }, { replicas: 2 });
    expect(result.written).toBe(true);
    expect(f.patches).toHaveLength(1);
    expect(f.patches[0]?.resourceVersion).toBe('1');
    expect(f.patches[0]?.status).toMatchObject({ replicas: 2, phase: 'Starting', observedGeneration: 1 });
    expect(f.emitted).toEqual([]);
  });

  it('does not write when nothing changed, even if the API server reorders keys', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready }, { selector: { a: 1, b: 2 } });
    f.nowMs += 30_000;
    const again = await f.reconcile({ children: ready }, { selector: { b: 2, a: 1 } });
    expect(again.written).toBe(false);
    expect(f.patches).toHaveLength(1);
  });

  it('writes when only an upstream field changed, keeping lastTransitionTime', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready }, { replicas: 1 });
    f.nowMs += 30_000;
    const next = await f.reconcile({ children: ready }, { replicas: 2 });
    expect(next.written).toBe(true);
    expect(f.patches[1]?.status).toMatchObject({ replicas: 2 });
    const conditions = readEngineStatus(f.object.status)?.conditions;
    expect(findCondition(conditions, 'Ready')?.lastTransitionTime).toBe('2026-03-01T12:00:00Z');
  });

  it('a spec error: Failed, terminal, Warnings that name the field; recovery: Normal events', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready });
    f.nowMs += 5_000;
    const failed = await f.reconcile({
      children: ready,
      errors: [{ class: 'Spec', message: 'spec.template.roles[0].replicas: must be >= 0' }],
    });
    expect(failed.terminal).toBe(true);
    expect(failed.status.phase).toBe('Failed');
    expect(f.emitted.map((e) => [e.type, e.reason, e.message])).toEqual([
      ['Warning', 'InvalidSpec', 'Ready is now False: spec.template.roles[0].replicas: must be >= 0'],
      ['Warning', 'InvalidSpec', 'ConfigValid is now False: spec.template.roles[0].replicas: must be >= 0'],
    ]);
    expect(f.emitted[0]).toMatchObject({
      source: 'modelserving-controller',
      involvedObject: { apiVersion: 'workload.serving.volcano.sh/v1alpha1', kind: 'ModelServing', namespace: 'llm', name: 'llama', uid: 'u1' },
    });
    f.emitted = [];
    f.nowMs += 5_000;
    await f.reconcile({ children: ready });
    expect(f.emitted.map((e) => [e.type, e.reason, e.message])).toEqual([
      ['Normal', 'AllComponentsReady', 'Ready is now True'],
      ['Normal', 'ConfigurationValid', 'ConfigValid is now True'],
    ]);
  });

  it('emits nothing when the write fails (the retry will compute the transition again)', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready });
    f.failPatch = true;
    await expect(f.reconcile({ children: ready, errors: [{ class: 'Auth', message: 'secret hf-token: 401' }] })).rejects.toThrow('409');
    expect(f.emitted).toEqual([]);
  });

  it('keeps the written status when an event cannot be queued, and sends it with the next reconcile', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready });
    f.failEmit = true;
    const auth = { children: ready, errors: [{ class: 'Auth' as const, message: 'secret hf-token: 401' }] };
    const result = await f.reconcile(auth);
    expect(result.written).toBe(true);
    expect(result.status.phase).toBe('Degraded');
    expect(result.eventsPending).toBe(2);
    // Not left to the resync tick: the reconcile comes back soon to send them.
    expect(result.requeueAfterMs).toBe(PENDING_EVENTS_RETRY_MS);
    expect(f.outbox.entries.size).toBe(2);

    f.failEmit = false;
    f.nowMs += 5_000;
    const next = await f.reconcile(auth);
    expect(next.written).toBe(false);
    expect(next.eventsPending).toBe(0);
    expect(f.emitted.map((e) => [e.type, e.reason, e.message])).toEqual([
      ['Warning', 'AuthFailed', 'Ready is now False: secret hf-token: 401'],
      ['Warning', 'AuthFailed', 'AuthValid is now False: secret hf-token: 401'],
    ]);
    expect(f.outbox.entries.size).toBe(0);
    // Sent once: a further reconcile has nothing left to send.
    await f.reconcile(auth);
    expect(f.emitted).toHaveLength(2);
  });

  it('a reconcile that died between the write and the Events: the next one sends them', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready });
    // The write lands, then the process is gone before any Event is queued: emit never returns.
    f.hangEmit = true;
    const spec = { children: ready, errors: [{ class: 'Spec' as const, message: 'spec.replicas: must be >= 0' }] };
    void f.reconcile(spec);
    await vi.waitFor(() => expect(f.patches).toHaveLength(2));
    expect(f.emitted).toEqual([]);
    f.hangEmit = false;
    await f.reconcile(spec);
    expect(f.emitted.map((e) => [e.type, e.reason])).toEqual([
      ['Warning', 'InvalidSpec'],
      ['Warning', 'InvalidSpec'],
    ]);
  });

  it('drops saved transitions whose write never landed (a 409), and those of a deleted namesake', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready });
    f.failPatch = true;
    await expect(f.reconcile({ children: ready, errors: [{ class: 'Auth', message: 'secret hf-token: 401' }] })).rejects.toThrow('409');
    expect(f.outbox.entries.size).toBe(2);
    f.failPatch = false;
    // The retry finds the Auth error gone: nothing happened, nothing is announced.
    await f.reconcile({ children: ready });
    expect(f.emitted).toEqual([]);
    expect(f.outbox.entries.size).toBe(0);

    // An entry of an object since deleted and re-created under the same name.
    await f.outbox.save([{ uid: 'old-uid', condition: { type: 'Ready', status: 'True', lastTransitionTime: '2026-03-01T12:00:00Z' }, event: { type: 'Normal', reason: 'AllComponentsReady', message: 'Ready is now True' } }]);
    await f.reconcile({ children: ready });
    expect(f.emitted).toEqual([]);
    expect(f.outbox.entries.size).toBe(0);
  });

  it('replaces each field whole: a nested key the new value lacks is removed, then nothing is rewritten', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready }, { currentAllocation: { numReplicas: 3, accelerator: 'A100' }, desiredOptimizedAlloc: { numReplicas: 3, accelerator: 'A100', lastRunTime: 't0' } });
    f.nowMs += 30_000;
    const cleared = await f.reconcile({ children: ready }, { currentAllocation: { numReplicas: 0 } });
    expect(cleared.written).toBe(true);
    expect(f.object.status).toMatchObject({ currentAllocation: { numReplicas: 0 }, desiredOptimizedAlloc: { accelerator: 'A100' } });
    expect(f.status.currentAllocation).toEqual({ numReplicas: 0 });
    f.nowMs += 30_000;
    const again = await f.reconcile({ children: ready }, { currentAllocation: { numReplicas: 0 } });
    expect(again.written).toBe(false);
    // `null` at the top removes a field.
    await f.reconcile({ children: ready }, { desiredOptimizedAlloc: null });
    expect(f.object.status).not.toHaveProperty('desiredOptimizedAlloc');
  });

  it('rejects engine-owned keys in fields', async () => {
    const f = new Fixture();
    await expect(f.reconcile({ children: ready }, { phase: 'Ready' })).rejects.toThrow(/state engine/);
  });
});

describe('readEngineStatus', () => {
  it('keeps the readable conditions and drops the rest', () => {
    const read = readEngineStatus({
      phase: 'Running',
      observedGeneration: 3,
      replicas: 2,
      conditions: [
        { type: 'Ready', status: 'True', reason: 'AllComponentsReady', message: '', lastTransitionTime: '2026-03-01T12:00:00Z' },
        { type: 'Broken', status: 'Maybe', reason: 'x', message: '', lastTransitionTime: 'never' },
        { type: 'Ready', status: 'False', reason: 'Duplicate', message: '', lastTransitionTime: '2026-03-01T12:00:00Z' },
      ],
    });
    expect(read?.phase).toBeUndefined();
    expect(read?.observedGeneration).toBe(3);
    expect(read?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual(['Ready=True']);
    expect(readEngineStatus(undefined)).toBeUndefined();
    expect(readEngineStatus('garbage')).toBeUndefined();
  });
});
