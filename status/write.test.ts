import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Resources } from '../kube/resources.js';
import type { EventSink } from '../runtime/events.js';
import { findCondition } from './conditions.js';
import type { ChildHealth } from './engine.js';
import { type StatusOwner, type WriteStatusArgs, readEngineStatus, writeStatus } from './write.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');
type Emitted = Parameters<EventSink['emit']>[0];

/**
 * An object whose status the helper reads and writes, kept in memory so a sequence of reconciles
 * can be driven: each `reconcile` reads the object as stored, the patch stores what was sent.
 * The real status subresource is exercised by test/integration/status-*.test.ts.
 */
class Fixture {
  object: StatusOwner = { metadata: { name: 'llama', namespace: 'llm', uid: 'u1', generation: 1, resourceVersion: '1' } };
  patches: Array<{ status: Record<string, unknown>; resourceVersion: string | undefined }> = [];
  emitted: Emitted[] = [];
  failPatch = false;
  failEmit = false;
  nowMs = T0;

  async reconcile(input: WriteStatusArgs['input'], fields?: Record<string, unknown>) {
    const ctx = {
      kc: new KubeConfig(),
      log: pino({ level: 'silent' }),
      now: () => new Date(this.nowMs),
      events: {
        emit: async (request: Emitted) => {
          if (this.failEmit) throw new Error('redis is down');
          this.emitted.push(request);
        },
      },
    };
    return writeStatus(ctx, {
      resource: Resources.modelServing,
      object: structuredClone(this.object),
      input,
      fields,
      source: 'modelserving-controller',
      patch: async (status, resourceVersion) => {
        if (this.failPatch) throw new Error('409 Conflict');
        this.patches.push({ status, resourceVersion });
        const rv = String(Number(this.object.metadata.resourceVersion) + 1);
        this.object = { ...this.object, metadata: { ...this.object.metadata, resourceVersion: rv }, status: structuredClone(status) };
      },
    });
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

  it('keeps the written status when an event cannot be queued', async () => {
    const f = new Fixture();
    await f.reconcile({ children: ready });
    f.failEmit = true;
    const result = await f.reconcile({ children: ready, errors: [{ class: 'Auth', message: 'secret hf-token: 401' }] });
    expect(result.written).toBe(true);
    expect(result.status.phase).toBe('Degraded');
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
