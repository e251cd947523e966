import { describe, expect, it } from 'vitest';
import { admitLabels } from './admission.js';
import { expectedFinalizersSatisfied } from './available-conditions.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, CONTROL_LABEL, Label, perIdKey as k, permissionKey as perm } from './keys.js';

// kuperator's mutating-webhook table (webhook_test.go TestMutating), as pure cases. Every label written by the
// mutation carries TS, as every label the cases start from does.
const TS = '1717505885197871195';
const NOW = BigInt(TS);
const CONTROL = { [CONTROL_LABEL]: 'true' };
const FINALIZER = 'finalizer1';
const ANNOTATIONS = { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { 'a.b.c/1': FINALIZER } }) };

interface Case {
  note: string;
  old?: Record<string, string>;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  readyToOperate?: boolean;
  expected: Record<string, string>;
}

const cases: Case[] = [
  {
    note: '1 pre-check',
    labels: { [k('operating', '123')]: TS, [k('operationType', '123')]: 'upgrade' },
    expected: { [k('operating', '123')]: TS, [k('operationType', '123')]: 'upgrade', [k('preCheck', '123')]: TS },
  },
  {
    note: '2 pre-check, two IDs',
    labels: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'upgrade',
    },
    expected: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preCheck', '123')]: TS,
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'upgrade',
      [k('preCheck', '456')]: TS,
    },
  },
  {
    note: '3 preparing',
    readyToOperate: false,
    labels: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
    },
    expected: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
      [k('preparing', '123')]: TS,
    },
  },
  {
    note: '4 preparing, undo',
    labels: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preCheck', '123')]: TS,
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
      [k('undoOperationType', '123')]: 'upgrade',
    },
    expected: {},
  },
  {
    note: '5 preparing, operate, undo',
    readyToOperate: false,
    labels: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preCheck', '123')]: TS,
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
      [k('undoOperationType', '123')]: 'upgrade',
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'replace',
      [k('preChecked', '456')]: TS,
      [perm('replace')]: TS,
    },
    expected: {
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'replace',
      [k('preChecked', '456')]: TS,
      [perm('replace')]: TS,
      [k('preparing', '456')]: TS,
    },
  },
  {
    note: '6 preparing, pre-check',
    readyToOperate: false,
    labels: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'replace',
    },
    expected: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
      [k('preparing', '123')]: TS,
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'replace',
      [k('preCheck', '456')]: TS,
    },
  },
  {
    note: '7 preparing, not ready to operate',
    readyToOperate: false,
    labels: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
    },
    expected: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
      [k('preparing', '123')]: TS,
    },
  },
  {
    note: '8 preparing → operate in one write, two IDs of two types',
    labels: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'restart',
      [k('preChecked', '123')]: TS,
      [perm('restart')]: TS,
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'delete',
      [k('preChecked', '456')]: TS,
      [perm('delete')]: TS,
    },
    expected: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'restart',
      [k('preChecked', '123')]: TS,
      [perm('restart')]: TS,
      [k('operate', '123')]: TS,
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'delete',
      [k('preChecked', '456')]: TS,
      [perm('delete')]: TS,
      [k('operate', '456')]: TS,
    },
  },
  {
    note: '9 operated (type read from the old Pod)',
    old: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('preChecked', '123')]: TS,
      [perm('upgrade')]: TS,
      [k('operate', '123')]: TS,
    },
    labels: { [k('preChecked', '123')]: TS, [perm('upgrade')]: TS, [k('operate', '123')]: TS },
    expected: { [k('operated', '123')]: TS, [k('postCheck', '123')]: TS, [k('doneOperationType', '123')]: 'upgrade' },
  },
  {
    note: '10 post-check, but wait for operating',
    old: {
      [k('operating', '123')]: TS,
      [k('operationType', '123')]: 'upgrade',
      [k('operating', '456')]: TS,
      [k('operationType', '456')]: 'upgrade',
    },
    labels: { [k('operating', '123')]: TS, [k('operationType', '123')]: 'upgrade' },
    expected: { [k('operating', '123')]: TS, [k('operationType', '123')]: 'upgrade', [k('preCheck', '123')]: TS },
  },
  {
    note: '11 post-check',
    labels: {
      [k('operate', '123')]: TS,
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('operate', '456')]: TS,
      [k('operated', '456')]: TS,
      [k('doneOperationType', '456')]: 'upgrade',
    },
    expected: {
      [k('operate', '123')]: TS,
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('postCheck', '123')]: TS,
      [k('operate', '456')]: TS,
      [k('operated', '456')]: TS,
      [k('doneOperationType', '456')]: 'upgrade',
      [k('postCheck', '456')]: TS,
    },
  },
  {
    note: '12 complete',
    labels: {
      [k('operate', '123')]: TS,
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('postChecked', '123')]: TS,
      [k('operate', '456')]: TS,
      [k('operated', '456')]: TS,
      [k('doneOperationType', '456')]: 'upgrade',
      [k('postChecked', '456')]: TS,
    },
    expected: {
      [k('operate', '123')]: TS,
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('postChecked', '123')]: TS,
      [k('completing', '123')]: TS,
      [k('operate', '456')]: TS,
      [k('operated', '456')]: TS,
      [k('doneOperationType', '456')]: 'upgrade',
      [k('postChecked', '456')]: TS,
      [k('completing', '456')]: TS,
    },
  },
  {
    note: '13 all expected finalizers satisfied (no annotation)',
    labels: {
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('postChecked', '123')]: TS,
      [k('completing', '123')]: TS,
    },
    expected: {},
  },
  {
    note: '14 all expected finalizers satisfied (annotation and finalizer)',
    finalizers: [FINALIZER],
    annotations: ANNOTATIONS,
    labels: {
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('postChecked', '123')]: TS,
      [k('completing', '123')]: TS,
    },
    expected: {},
  },
  {
    note: '15 not all expected finalizers satisfied',
    finalizers: [],
    annotations: ANNOTATIONS,
    labels: {
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('postChecked', '123')]: TS,
      [k('completing', '123')]: TS,
    },
    expected: {
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('postChecked', '123')]: TS,
      [k('completing', '123')]: TS,
    },
  },
  {
    note: '16 all finished, two IDs',
    labels: {
      [k('operate', '123')]: TS,
      [k('operated', '123')]: TS,
      [k('doneOperationType', '123')]: 'upgrade',
      [k('postCheck', '123')]: TS,
      [k('postChecked', '123')]: TS,
      [k('completing', '123')]: TS,
      [k('operate', '456')]: TS,
      [k('operated', '456')]: TS,
      [k('doneOperationType', '456')]: 'upgrade',
      [k('postCheck', '456')]: TS,
      [k('postChecked', '456')]: TS,
      [k('completing', '456')]: TS,
    },
    expected: {},
  },
];

describe('admitLabels: kuperator TestMutating table', () => {
  it.each(cases)('$note', (c) => {
    const satisfied = expectedFinalizersSatisfied({ annotations: c.annotations ?? {}, finalizers: c.finalizers ?? [] });
    const result = admitLabels({
      labels: { ...c.labels, ...CONTROL },
      ...(c.old ? { previousLabels: { ...c.old, ...CONTROL } } : {}),
      readyToOperate: c.readyToOperate ?? true,
      expectedFinalizersSatisfied: satisfied,
      now: NOW,
    });
    expect(result.labels).toEqual({ ...c.expected, ...CONTROL });
    expect(result.invalidKeys).toEqual([]);
  });
});

describe('admitLabels: where Ripple closes kuperator holes', () => {
  const admit = (labels: Record<string, string>, extra: Partial<Parameters<typeof admitLabels>[0]> = {}) =>
    admitLabels({ labels: { ...labels, ...CONTROL }, readyToOperate: false, expectedFinalizersSatisfied: true, now: NOW, ...extra }).labels;

  it('clears what an operator that finished before operate left behind', () => {
    // operating removed while still preparing: upstream never finds the ID again and the labels stay forever.
    expect(
      admit({
        [k('operationType', '123')]: 'upgrade',
        [k('preChecked', '123')]: TS,
        [k('preparing', '123')]: TS,
        [perm('upgrade')]: TS,
      }),
    ).toEqual(CONTROL);
  });

  it('an abandoned ID does not hold the barrier of the others', () => {
    const out = admit({
      [k('operationType', 'gone')]: 'upgrade',
      [k('preparing', 'gone')]: TS,
      [k('operated', '456')]: TS,
      [k('doneOperationType', '456')]: 'restart',
      [k('operate', '456')]: TS,
    });
    expect(out).toEqual({ ...CONTROL, [k('operated', '456')]: TS, [k('doneOperationType', '456')]: 'restart', [k('operate', '456')]: TS, [k('postCheck', '456')]: TS });
  });

  it('an ID that began while another was completing is not deadlocked at operate', () => {
    // Upstream: the newcomer waits for every ID to hold operate, which the completing one dropped long ago.
    const out = admit({
      [k('operated', 'a')]: TS,
      [k('doneOperationType', 'a')]: 'update',
      [k('postChecked', 'a')]: TS,
      [k('completing', 'a')]: TS,
      [k('operationType', 'b')]: 'restart',
      [k('operate', 'b')]: TS,
    });
    expect(out).toEqual({
      ...CONTROL,
      [k('operated', 'a')]: TS,
      [k('doneOperationType', 'a')]: 'update',
      [k('postChecked', 'a')]: TS,
      [k('completing', 'a')]: TS,
      [k('operated', 'b')]: TS,
      [k('doneOperationType', 'b')]: 'restart',
      [k('postCheck', 'b')]: TS,
    });
  });

  it('no ID passes operate while another still holds operating, even one that is completing', () => {
    const labels = {
      [k('operated', 'a')]: TS,
      [k('doneOperationType', 'a')]: 'update',
      [k('postChecked', 'a')]: TS,
      [k('completing', 'a')]: TS,
      [k('operating', 'b')]: TS,
      [k('operationType', 'b')]: 'restart',
      [k('preChecked', 'b')]: TS,
      [perm('restart')]: TS,
      [k('operate', 'b')]: TS,
    };
    expect(admit(labels, { readyToOperate: true })).toEqual({ ...CONTROL, ...labels });
  });

  it('a permission outlives no ID of its type', () => {
    expect(admit({ [perm('upgrade')]: TS, [k('operating', '1')]: TS, [k('operationType', '1')]: 'restart' })).toEqual({
      ...CONTROL,
      [k('operating', '1')]: TS,
      [k('operationType', '1')]: 'restart',
      [k('preCheck', '1')]: TS,
    });
  });

  it('with stay-offline, completing is cleaned up without waiting for finalizers nobody will re-add', () => {
    const labels = { [Label.stayOffline]: 'true', [k('operated', '1')]: TS, [k('doneOperationType', '1')]: 'u', [k('postChecked', '1')]: TS, [k('completing', '1')]: TS };
    expect(admit(labels, { expectedFinalizersSatisfied: false })).toEqual({ ...CONTROL, [Label.stayOffline]: 'true' });
  });

  it('removes service-available when an ID enters preparing', () => {
    const out = admit({ [Label.serviceAvailable]: TS, [k('operating', '1')]: TS, [k('operationType', '1')]: 'u', [k('preChecked', '1')]: TS, [perm('u')]: TS });
    expect(out[Label.serviceAvailable]).toBeUndefined();
    expect(out[k('preparing', '1')]).toBe(TS);
  });

  it('leaves a bare prefix key alone and reports it', () => {
    const r = admitLabels({ labels: { 'operating.podopslifecycle.kusionstack.io': TS, ...CONTROL }, readyToOperate: true, expectedFinalizersSatisfied: true, now: NOW });
    expect(r.invalidKeys).toEqual(['operating.podopslifecycle.kusionstack.io']);
    expect(r.labels).toEqual({ 'operating.podopslifecycle.kusionstack.io': TS, ...CONTROL });
  });
});
