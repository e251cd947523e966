import { describe, expect, it } from 'vitest';
import { CONTROL_LABEL, Label, PER_ID_LABELS, perIdKey as k, permissionKey as perm } from './keys.js';
import {
  allowOps,
  begin,
  beginWithCleaningOld,
  clearPreparingToDelete,
  finish,
  isDuringOps,
  markPreparingToDelete,
  OpsLifecycleError,
  undo,
  type MetadataHook,
  type OperationAdapter,
} from './operation.js';

const CONTROL = { [CONTROL_LABEL]: 'true' };
const T0 = 1_717_505_885_197_871_195n;
const SECOND = 1_000_000_000n;

// kuperator utils_test.go TestLifecycle: a mock adapter whose hooks set and clear one label.
const MOCK_KEY = 'mockLabel';
const MOCK_VALUE = 'mockLabelValue';
const setMock: MetadataHook = (d) => {
  d.labels[MOCK_KEY] = MOCK_VALUE;
};
const clearMock: MetadataHook = (d) => {
  delete d.labels[MOCK_KEY];
};
const mock = (id: string, allowMultiType: boolean): OperationAdapter => ({
  id,
  type: 'type-1',
  allowMultiType,
  whenBegin: setMock,
  whenFinish: clearMock,
});

function grantOperate(labels: Record<string, string>, id: string, value = 'true'): Record<string, string> {
  return { ...labels, [k('operate', id)]: value };
}

describe('Begin / Finish: kuperator TestLifecycle', () => {
  const runFlow = (a: OperationAdapter, start: Record<string, string>) => {
    const begun = begin({ labels: start }, a, { now: T0 });
    expect(begun.labels[MOCK_KEY]).toBe(MOCK_VALUE);
    expect(isDuringOps(begun, a)).toBe(true);

    const again = begin({ labels: grantOperate(begun.labels, a.id) }, a, { now: T0 + SECOND });
    expect(isDuringOps(again, a)).toBe(true);
    expect(again.labels[k('operating', a.id)]).toBe(begun.labels[k('operating', a.id)]);

    const finished = finish({ labels: again.labels }, a, { now: T0 + 2n * SECOND });
    expect(finished.changed).toBe(true);
    expect(finished.labels[MOCK_KEY]).toBeUndefined();
    expect(isDuringOps(finished, a)).toBe(false);
  };

  it('begins, is during ops, finishes', () => {
    runFlow(mock('id-1', false), { ...CONTROL });
  });

  it('begins again on a Pod already operating under the same ID and type', () => {
    const a = mock('id-1', false);
    runFlow(a, { ...CONTROL, [k('operating', 'id-1')]: T0.toString(), [k('operationType', 'id-1')]: 'type-1', [MOCK_KEY]: MOCK_VALUE });
  });

  it('refuses a second ID of the same type when AllowMultiType is false, with kuperator\'s text', () => {
    const withB = { ...CONTROL, [k('operating', 'id-2')]: T0.toString(), [k('operationType', 'id-2')]: 'type-1' };
    expect(() => begin({ labels: withB }, mock('id-1', false), { now: T0 })).toThrowError(
      new OpsLifecycleError('TypeConflict', 'operationType type-1 exists: [operation-type.podopslifecycle.kusionstack.io/id-2]'),
    );
    try {
      begin({ labels: withB }, mock('id-1', false), { now: T0 });
    } catch (err) {
      expect(err).toBeInstanceOf(OpsLifecycleError);
      expect((err as Error).message).toBe('operationType type-1 exists: [operation-type.podopslifecycle.kusionstack.io/id-2]');
    }
  });

  it('allows a second ID of the same type when AllowMultiType is true', () => {
    const withB = { ...CONTROL, [k('operating', 'id-2')]: T0.toString(), [k('operationType', 'id-2')]: 'type-1' };
    runFlow(mock('id-1', true), withB);
  });
});

describe('begin', () => {
  const upd: OperationAdapter = { id: 'collaset', type: 'update', allowMultiType: true };

  it('writes operating=now and the type, and nothing else', () => {
    const r = begin({ labels: CONTROL }, upd, { now: T0 });
    expect(r.patch.labels).toEqual({ set: { [k('operating', 'collaset')]: T0.toString(), [k('operationType', 'collaset')]: 'update' }, remove: [] });
  });

  it('is idempotent: a second begin changes nothing', () => {
    const first = begin({ labels: CONTROL }, upd, { now: T0 });
    const second = begin({ labels: first.labels }, upd, { now: T0 + SECOND });
    expect(second.changed).toBe(false);
  });

  it('refuses to switch the type of a running ID (kuperator silently overwrites it)', () => {
    const running = begin({ labels: CONTROL }, upd, { now: T0 }).labels;
    expect(() => begin({ labels: running }, { ...upd, type: 'restart' }, { now: T0 })).toThrow(
      'operatingID collaset already has operationType update',
    );
  });

  it('lists every conflicting key, sorted', () => {
    const labels = { ...CONTROL, [k('operationType', 'b')]: 'x', [k('operationType', 'a')]: 'x', [k('operating', 'a')]: '1', [k('operating', 'b')]: '1' };
    expect(() => begin({ labels }, { id: 'c', type: 'x', allowMultiType: false }, { now: T0 })).toThrow(
      `operationType x exists: [${k('operationType', 'a')} ${k('operationType', 'b')}]`,
    );
  });

  it('only operation-type counts as a conflict: an ID past operated (done-operation-type) does not', () => {
    const labels = { ...CONTROL, [k('operated', 'a')]: '1', [k('doneOperationType', 'a')]: 'x', [k('completing', 'a')]: '1' };
    expect(begin({ labels }, { id: 'c', type: 'x', allowMultiType: false }, { now: T0 }).changed).toBe(true);
  });

  it('starts a clean round when the ID still carries a finished one', () => {
    const completing = {
      ...CONTROL,
      [k('operate', 'u')]: '1',
      [k('operated', 'u')]: '2',
      [k('doneOperationType', 'u')]: 'update',
      [k('postChecked', 'u')]: '3',
      [k('completing', 'u')]: '4',
    };
    const r = begin({ labels: completing }, { id: 'u', type: 'update', allowMultiType: true }, { now: T0 });
    expect(r.labels).toEqual({ ...CONTROL, [k('operating', 'u')]: T0.toString(), [k('operationType', 'u')]: 'update' });
  });

  it('refuses Pods without the control label', () => {
    expect(() => begin({ labels: {} }, upd, { now: T0 })).toThrow(/kusionstack.io\/control=true/);
  });

  it('refuses IDs and types that cannot be label parts', () => {
    expect(() => begin({ labels: CONTROL }, { ...upd, id: 'x'.repeat(64) }, { now: T0 })).toThrow(OpsLifecycleError);
    expect(() => begin({ labels: CONTROL }, { ...upd, type: 'a b' }, { now: T0 })).toThrow(/not a valid label value/);
  });

  it('hooks may touch annotations; extra hooks run before the adapter\'s', () => {
    const order: string[] = [];
    const a: OperationAdapter = {
      ...upd,
      whenBegin: (d) => {
        order.push('adapter');
        d.annotations['example.com/began'] = 'yes';
      },
    };
    const r = begin({ labels: CONTROL }, a, { now: T0, hooks: [() => order.push('extra')] });
    expect(order).toEqual(['extra', 'adapter']);
    expect(r.patch.annotations.set).toEqual({ 'example.com/began': 'yes' });
  });
});

describe('allowOps', () => {
  const a: OperationAdapter = { id: 'job', type: 'restart', allowMultiType: true };
  const during = { ...CONTROL, [k('operating', 'job')]: '1', [k('operationType', 'job')]: 'restart' };

  it('not during ops → no', () => {
    expect(allowOps({ labels: CONTROL }, a, { now: T0 })).toEqual({ allowed: false });
    expect(allowOps({ labels: { ...during, [k('operationType', 'job')]: 'other' } }, a, { now: T0 })).toEqual({ allowed: false });
  });

  it('during ops, before operate → no', () => {
    expect(allowOps({ labels: during }, a, { now: T0 })).toEqual({ allowed: false });
  });

  it('operate granted, no delay → yes', () => {
    expect(allowOps({ labels: grantOperate(during, 'job', T0.toString()) }, a, { now: T0 })).toEqual({ allowed: true });
  });

  it('a running delay answers no, with how long is left', () => {
    const labels = grantOperate(during, 'job', T0.toString());
    expect(allowOps({ labels }, a, { now: T0 + 4n * SECOND, operationDelaySeconds: 10 })).toEqual({ allowed: false, requeueAfterMs: 6000 });
    expect(allowOps({ labels }, a, { now: T0 + 4n * SECOND + 1n, operationDelaySeconds: 10 })).toEqual({ allowed: false, requeueAfterMs: 6000 });
    expect(allowOps({ labels }, a, { now: T0 + 10n * SECOND, operationDelaySeconds: 10 })).toEqual({ allowed: true });
  });

  it('a clock behind the writer asks for at most one full delay', () => {
    const labels = grantOperate(during, 'job', T0.toString());
    expect(allowOps({ labels }, a, { now: T0 - 60n * SECOND, operationDelaySeconds: 10 })).toEqual({ allowed: false, requeueAfterMs: 10_000 });
  });

  it('an operate value that is not a timestamp does not delay', () => {
    expect(allowOps({ labels: grantOperate(during, 'job', 'true') }, a, { now: T0, operationDelaySeconds: 10 })).toEqual({ allowed: true });
  });
});

describe('finish', () => {
  const a: OperationAdapter = { id: 'job', type: 'restart', allowMultiType: true };

  it('after operate drops only operating; the lifecycle carries on from there', () => {
    const labels = { ...CONTROL, [k('operating', 'job')]: '1', [k('operationType', 'job')]: 'restart', [k('preChecked', 'job')]: '2', [perm('restart')]: '2', [k('operate', 'job')]: '3' };
    expect(finish({ labels }, a, { now: T0 }).patch.labels).toEqual({ set: {}, remove: [k('operating', 'job')] });
  });

  it('before operate clears the ID: nothing is left behind (kuperator leaves type, pre-checked, preparing, permission)', () => {
    const labels = {
      ...CONTROL,
      [k('operating', 'job')]: '1',
      [k('operationType', 'job')]: 'restart',
      [k('preChecked', 'job')]: '2',
      [perm('restart')]: '2',
      [k('preparing', 'job')]: '3',
    };
    expect(finish({ labels }, a, { now: T0 }).labels).toEqual(CONTROL);
  });

  it('refuses to finish an ID running under another type', () => {
    const labels = { ...CONTROL, [k('operating', 'job')]: '1', [k('operationType', 'job')]: 'update' };
    expect(() => finish({ labels }, a, { now: T0 })).toThrow('operatingID job has invalid operationType update');
  });

  it('on a Pod without the ID only runs the hook', () => {
    expect(finish({ labels: CONTROL }, a, { now: T0 }).changed).toBe(false);
  });
});

describe('undo', () => {
  const a: OperationAdapter = { id: 'job', type: 'restart', allowMultiType: true, whenBegin: markPreparingToDelete, whenUndo: clearPreparingToDelete };

  it('clears every label of its ID, whatever stage it reached', () => {
    const every = Object.fromEntries(PER_ID_LABELS.map((l) => [k(l, 'job'), l.endsWith('ype') ? 'restart' : '1']));
    const other = { [k('operating', 'keep')]: '1', [k('operationType', 'keep')]: 'update', [perm('update')]: '1' };
    const r = undo({ labels: { ...CONTROL, ...every, ...other, [perm('restart')]: '1' } }, a, { now: T0 });
    expect(r.labels).toEqual({ ...CONTROL, ...other });
  });

  it('keeps the type\'s permission while another ID of that type remains', () => {
    const labels = {
      ...CONTROL,
      [k('operating', 'job')]: '1',
      [k('operationType', 'job')]: 'restart',
      [k('operating', 'job2')]: '1',
      [k('operationType', 'job2')]: 'restart',
      [perm('restart')]: '1',
    };
    expect(undo({ labels }, a, { now: T0 }).labels[perm('restart')]).toBe('1');
  });

  it('takes back what whenBegin announced', () => {
    const begun = begin({ labels: CONTROL }, a, { now: T0 });
    expect(begun.labels[Label.preparingToDelete]).toBe(T0.toString());
    expect(undo({ labels: begun.labels }, a, { now: T0 }).labels).toEqual(CONTROL);
  });

  it('does nothing when the ID is not on the Pod', () => {
    expect(undo({ labels: { ...CONTROL, [Label.preparingToDelete]: '1' } }, a, { now: T0 }).changed).toBe(false);
  });
});

describe('beginWithCleaningOld', () => {
  const a: OperationAdapter = { id: 'collaset', type: 'update', allowMultiType: true };

  it('restarts a running round with a new operating timestamp, in one write', () => {
    const first = begin({ labels: CONTROL }, a, { now: T0 });
    const progressed = { ...first.labels, [k('preChecked', 'collaset')]: '2', [perm('update')]: '2', [k('preparing', 'collaset')]: '3' };
    const r = beginWithCleaningOld({ labels: progressed }, a, { now: T0 + SECOND });
    expect(r.labels).toEqual({ ...CONTROL, [k('operating', 'collaset')]: (T0 + SECOND).toString(), [k('operationType', 'collaset')]: 'update' });
  });

  it('is a plain begin when the ID is absent', () => {
    expect(beginWithCleaningOld({ labels: CONTROL }, a, { now: T0 }).labels).toEqual(begin({ labels: CONTROL }, a, { now: T0 }).labels);
  });
});
