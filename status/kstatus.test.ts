import { describe, expect, it } from 'vitest';
import { computeStatus } from './engine.js';
import { computeKstatus, kubectlWaitConditionMet, type ReadableObject } from './kstatus.js';

const now = new Date('2026-03-01T12:00:00Z');

function object(result: ReturnType<typeof computeStatus>, generation: number): ReadableObject {
  return { metadata: { generation }, status: result.status };
}

describe('kstatus reading of engine output', () => {
  it('a ready resource reads Current, and kubectl wait --for=condition=Ready returns', () => {
    const obj = object(computeStatus({ generation: 3, now, children: [{ name: 'ServingGroups', state: 'Ready' }] }), 3);
    expect(computeKstatus(obj).status).toBe('Current');
    expect(kubectlWaitConditionMet(obj, 'Ready')).toBe(true);
    expect(kubectlWaitConditionMet(obj, 'ready')).toBe(true);
    expect(kubectlWaitConditionMet(obj, 'ConfigValid', 'true')).toBe(true);
  });

  it('a failed resource (spec error) reads Failed, with the reason', () => {
    const obj = object(
      computeStatus({ generation: 3, now, errors: [{ class: 'Spec', message: 'spec.replicas: must be >= 0' }] }),
      3,
    );
    expect(computeKstatus(obj)).toEqual({ status: 'Failed', reason: 'InvalidSpec', message: 'spec.replicas: must be >= 0' });
    expect(kubectlWaitConditionMet(obj, 'Ready')).toBe(false);
    expect(kubectlWaitConditionMet(obj, 'Stalled')).toBe(true);
  });

  it('Starting, Degraded and Pending read InProgress', () => {
    const starting = computeStatus({ generation: 1, now, children: [{ name: 'A', state: 'Starting' }] });
    const degraded = computeStatus({ generation: 1, now, errors: [{ class: 'Auth', message: 'denied' }] });
    const pending = computeStatus({ generation: 1, now, errors: [{ class: 'Connectivity', message: 'down' }] });
    for (const r of [starting, degraded, pending]) expect(computeKstatus(object(r, 1)).status).toBe('InProgress');
  });

  it('a NotAvailable resource reads Failed (it cannot progress without a change to the cluster)', () => {
    const r = computeStatus({ generation: 1, now, children: [{ name: 'Template', state: 'NotAvailable', reason: 'GPUNotAvailable' }] });
    expect(computeKstatus(object(r, 1)).status).toBe('Failed');
  });

  it('a status written for an older generation reads InProgress, and kubectl wait does not return', () => {
    const obj = object(computeStatus({ generation: 3, now }), 4);
    expect(computeKstatus(obj)).toMatchObject({ status: 'InProgress', reason: 'LatestGenerationNotObserved' });
    expect(kubectlWaitConditionMet(obj, 'Ready')).toBe(false);
  });
});

describe('computeKstatus rules', () => {
  it('Terminating first', () => {
    expect(computeKstatus({ metadata: { deletionTimestamp: '2026-03-01T12:00:00Z' } }).status).toBe('Terminating');
  });

  it('Ready=False alone is only InProgress: why the engine adds Stalled', () => {
    const aimLike: ReadableObject = {
      metadata: { generation: 1 },
      status: { conditions: [{ type: 'Ready', status: 'False', reason: 'InvalidSpec' }] },
    };
    expect(computeKstatus(aimLike).status).toBe('InProgress');
  });

  it('Reconciling=True wins over Stalled=True; no conditions at all is Current', () => {
    expect(
      computeKstatus({
        metadata: {},
        status: { conditions: [{ type: 'Stalled', status: 'True' }, { type: 'Reconciling', status: 'True' }] },
      }).status,
    ).toBe('InProgress');
    expect(computeKstatus({ metadata: { generation: 1 }, status: {} }).status).toBe('Current');
  });

  it('kubectl wait prefers the condition observedGeneration over the status one', () => {
    const obj: ReadableObject = {
      metadata: { generation: 2 },
      status: { observedGeneration: 2, conditions: [{ type: 'Ready', status: 'True', observedGeneration: 1 }] },
    };
    expect(kubectlWaitConditionMet(obj, 'Ready')).toBe(false);
    expect(kubectlWaitConditionMet({ metadata: { generation: 2 }, status: { conditions: [] } }, 'Ready')).toBe(false);
  });
});
