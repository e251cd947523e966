import { describe, expect, it } from 'vitest';
import { nextMarks, NO_MARKS, WriteTracker } from './write-marks.js';

describe('write marks', () => {
  it('keeps the newest version per resource; an unknown outcome makes the next reconcile list', () => {
    const t = new WriteTracker();
    t.note('pods', '10');
    t.note('pods', '12');
    t.note('pods', '11');
    t.note('services', '9');
    expect(t.marks).toEqual({ versions: { pods: '12', services: '9' }, unknown: false });
    t.note('controllerrevisions', undefined);
    expect(t.marks.unknown).toBe(true);
  });

  it('saves nothing when nothing was written and nothing needs clearing', () => {
    expect(nextMarks(NO_MARKS, false, new WriteTracker())).toBeUndefined();
    expect(nextMarks({ versions: { pods: '5' }, unknown: false }, true, new WriteTracker())).toBeUndefined();
  });

  it('merges with the previous marks, newest wins, and a reconcile that listed clears unknown', () => {
    const t = new WriteTracker();
    t.note('pods', '20');
    expect(nextMarks({ versions: { pods: '30', services: '7' }, unknown: false }, false, t)).toEqual({ versions: { pods: '30', services: '7' }, unknown: false });
    expect(nextMarks({ versions: { pods: '10' }, unknown: true }, false, t)).toEqual({ versions: { pods: '20' }, unknown: true });
    expect(nextMarks({ versions: { pods: '10' }, unknown: true }, true, t)).toEqual({ versions: { pods: '20' }, unknown: false });
    expect(nextMarks({ versions: {}, unknown: true }, true, new WriteTracker())).toEqual({ versions: {}, unknown: false });
    const again = new WriteTracker();
    again.noteUnknown();
    expect(nextMarks({ versions: {}, unknown: true }, true, again)).toEqual({ versions: {}, unknown: true });
  });
});
