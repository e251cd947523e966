import { describe, expect, it } from 'vitest';
import { idToLabelsMap, idToLabelsMapLenient, InvalidLifecycleLabelError, isLifecycleOnPod, numOfLifecycleOnPod } from './id-map.js';
import { LabelPrefix, perIdKey as k } from './keys.js';

// kuperator utils_test.go: TestIDToLabelsMap, TestIsLifecycleOnPod, TestNumOfLifecycleOnPod.
const asObject = (m: ReturnType<typeof idToLabelsMap>) => ({
  ids: Object.fromEntries(m.ids),
  typeCounts: Object.fromEntries(m.typeCounts),
});

describe('idToLabelsMap', () => {
  it('rejects a label that is only a prefix', () => {
    expect(() => idToLabelsMap({ [LabelPrefix.operating]: '1402144848' })).toThrowError(
      new InvalidLifecycleLabelError(LabelPrefix.operating),
    );
    expect(() => idToLabelsMap({ [LabelPrefix.operating]: '1402144848' })).toThrow(`invalid label ${LabelPrefix.operating}`);
  });

  it('a Pod without labels has no lifecycles', () => {
    expect(asObject(idToLabelsMap({}))).toEqual({ ids: {}, typeCounts: {} });
  });

  it('operating labels', () => {
    expect(asObject(idToLabelsMap({ [k('operating', '123')]: '1402144848', [k('operationType', '123')]: 'abc' }))).toEqual({
      ids: { '123': { operating: '1402144848', operationType: 'abc' } },
      typeCounts: { abc: 1 },
    });
  });

  it('operated labels: the type is counted through done-operation-type', () => {
    expect(asObject(idToLabelsMap({ [k('operated', '123')]: '1402144848', [k('doneOperationType', '123')]: 'abc' }))).toEqual({
      ids: { '123': { operated: '1402144848', doneOperationType: 'abc' } },
      typeCounts: { abc: 1 },
    });
  });

  it('two IDs of different types', () => {
    const labels = {
      [k('operating', '123')]: '1402144848',
      [k('operationType', '123')]: 'abc',
      [k('operating', '456')]: '1402144849',
      [k('operationType', '456')]: 'def',
    };
    expect(asObject(idToLabelsMap(labels))).toEqual({
      ids: { '123': { operating: '1402144848', operationType: 'abc' }, '456': { operating: '1402144849', operationType: 'def' } },
      typeCounts: { abc: 1, def: 1 },
    });
  });

  it('two IDs of the same type are counted', () => {
    const labels = {
      [k('operating', '123')]: '1402144848',
      [k('operationType', '123')]: 'abc',
      [k('operating', '456')]: '1402144849',
      [k('operationType', '456')]: 'abc',
    };
    expect(asObject(idToLabelsMap(labels)).typeCounts).toEqual({ abc: 2 });
  });

  it('finds IDs through every per-ID prefix, so leftovers are seen (Ripple)', () => {
    expect([...idToLabelsMap({ [k('preparing', 'x')]: '1', [k('operationType', 'x')]: 'u' }).ids.keys()]).toEqual(['x']);
  });

  it('ignores unrelated and fixed-key lifecycle labels', () => {
    expect(idToLabelsMap({ app: 'a', 'podopslifecycle.kusionstack.io/service-available': '1' }).ids.size).toBe(0);
  });

  it('the lenient form reports instead of throwing', () => {
    const m = idToLabelsMapLenient({ [LabelPrefix.operating]: '1', [k('operating', 'a')]: '2' });
    expect(m.invalidKeys).toEqual([LabelPrefix.operating]);
    expect([...m.ids.keys()]).toEqual(['a']);
  });
});

describe('isLifecycleOnPod / numOfLifecycleOnPod', () => {
  const two = {
    [k('operating', '123')]: '1402144848',
    [k('operationType', '123')]: 'abc',
    [k('operating', '456')]: '1402144849',
    [k('operationType', '456')]: 'abc',
  };
  it('answers per ID', () => {
    expect(isLifecycleOnPod({}, '123')).toBe(false);
    expect(isLifecycleOnPod(two, '456')).toBe(true);
    expect(isLifecycleOnPod(two, '789')).toBe(false);
    expect(isLifecycleOnPod({ [LabelPrefix.operating]: '1402144848' }, '1402144848')).toBe(false);
  });
  it('counts', () => {
    expect(numOfLifecycleOnPod({})).toBe(0);
    expect(numOfLifecycleOnPod({ [k('operating', '1')]: '1', [k('operationType', '1')]: 'abc' })).toBe(1);
    expect(numOfLifecycleOnPod(two)).toBe(2);
  });
});
