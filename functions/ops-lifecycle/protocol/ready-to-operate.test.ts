import { describe, expect, it } from 'vitest';
import { PROTECTION_FINALIZER_PREFIX, SERVICE_READY_CONDITION } from './keys.js';
import type { ConditionStatus } from './pod-state.js';
import { readyToOperate } from './ready-to-operate.js';

const PROT = `${PROTECTION_FINALIZER_PREFIX}/finalizer1`;
const gate = (status: ConditionStatus) => [{ type: SERVICE_READY_CONDITION, status }];

describe('readyToOperate: kuperator TestReadyToUpgrade', () => {
  it.each([
    // kuperator says true here (issue 15, scenario 3): an absent condition is not a drained Pod.
    { note: 'no protection finalizer, no service-ready condition', conditions: [{ type: 'pod.kusionstack.io/test', status: 'True' as const }], finalizers: [], want: false },
    { note: 'no protection finalizer, service-ready True', conditions: gate('True'), finalizers: [], want: false },
    { note: 'no protection finalizer, service-ready False', conditions: gate('False'), finalizers: [], want: true },
    { note: 'protection finalizer, service-ready False', conditions: gate('False'), finalizers: [PROT], want: false },
    { note: 'protection finalizer, service-ready True', conditions: gate('True'), finalizers: [PROT], want: false },
  ])('$note → $want', ({ conditions, finalizers, want }) => {
    expect(readyToOperate({ conditions, finalizers })).toBe(want);
  });
});

describe('readyToOperate: Ripple', () => {
  it('a protection finalizer holds the Pod even when service-ready was never written', () => {
    expect(readyToOperate({ conditions: [], finalizers: [PROT] })).toBe(false);
  });
  it('finalizers without the protection prefix do not hold it', () => {
    expect(readyToOperate({ conditions: gate('False'), finalizers: ['example.com/other'] })).toBe(true);
  });
  it('Unknown is not False', () => {
    expect(readyToOperate({ conditions: gate('Unknown'), finalizers: [] })).toBe(false);
  });
});
