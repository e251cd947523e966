import { describe, expect, it } from 'vitest';
import type { Action } from './plan/actions.js';
import { stages } from './apply.js';

const del = (name: string): Action => ({ kind: 'deletePod', name, uid: 'u', reason: '' });
const pod = (name: string): Action => ({ kind: 'createPod', pod: { metadata: { name } }, reason: '' });
const svc = (name: string): Action => ({ kind: 'createService', service: { metadata: { name } }, reason: '' });
const rev: Action = { kind: 'createControllerRevision', object: { metadata: { name: 'r' }, revision: 1 }, reason: '' };
const dropRev: Action = { kind: 'deleteControllerRevision', name: 'old', uid: 'u', reason: '' };

describe('stages', () => {
  it('keeps the plan order between stages and groups what can run together', () => {
    const out = stages([del('a'), del('b'), rev, pod('p1'), svc('s1'), pod('p2'), dropRev]);
    expect(out.map((s) => s.map((a) => a.kind))).toEqual([
      ['deletePod', 'deletePod'],
      ['createControllerRevision'],
      ['createPod', 'createService', 'createPod'],
      ['deleteControllerRevision'],
    ]);
  });

  it('a plan with only deletes is one stage', () => {
    expect(stages([del('a'), dropRev]).length).toBe(1);
    expect(stages([])).toEqual([]);
  });
});
