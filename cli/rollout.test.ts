import { describe, expect, it } from 'vitest';
import { indexRevisions, revisionOf } from '../functions/reconcile-modelserving/plan/revision.js';
import { controllerRevisionFor } from '../functions/reconcile-modelserving/plan/revision.js';
import { makeMS, roleSpec } from '../functions/reconcile-modelserving/plan/test-fixtures.js';
import { historyRows, rolesForUndo, undoTarget, RolloutError } from './rollout.js';

const msWith = (image: string, extra: Record<string, unknown> = {}) =>
  makeMS({ replicas: 2, rolloutStrategy: { type: 'RoleRollingUpdate' }, template: { roles: [{ ...roleSpec('prefill', { image, replicas: 3 }), ...extra }] } });

function known(images: string[]) {
  const crs = images.map((img, i) => {
    const ms = msWith(img);
    return { ...controllerRevisionFor(ms, revisionOf(ms.spec.template.roles), ms.spec.template.roles), revision: i + 1 };
  });
  return indexRevisions('llm', crs).byName;
}

describe('ripple rollout', () => {
  const k = known(['vllm:a', 'vllm:b', 'vllm:c']);

  it('history lists revisions oldest first with their images, marking the spec\'s', () => {
    const rows = historyRows(msWith('vllm:c'), k);
    expect(rows.map((r) => [r.revision, r.changeCause, r.images, r.state])).toEqual([
      [1, '<none>', 'prefill=vllm:a', ''],
      [2, '<none>', 'prefill=vllm:b', ''],
      [3, '<none>', 'prefill=vllm:c', 'update'],
    ]);
  });

  it('undo goes to the newest revision that is not the spec\'s, or to --to-revision', () => {
    expect(undoTarget(msWith('vllm:c'), k).object.revision).toBe(2);
    expect(undoTarget(msWith('vllm:c'), k, 1).object.revision).toBe(1);
    expect(() => undoTarget(msWith('vllm:c'), k, 42)).toThrow(new RolloutError('revision 42 not found; revisions of llm: 1, 2, 3'));
    expect(() => undoTarget(msWith('vllm:a'), known(['vllm:a']))).toThrow(/no previous revision/);
  });

  it('undo restores the templates and keeps the spec\'s replicas and rolling settings', () => {
    const now = msWith('vllm:c', { replicas: 5, maxUnavailable: 2, maxSurge: 1 }).spec.template.roles;
    const target = msWith('vllm:a').spec.template.roles;
    const roles = rolesForUndo(now, target);
    expect(roles[0]).toMatchObject({ replicas: 5, maxUnavailable: 2, maxSurge: 1 });
    expect(revisionOf(roles)).toBe(revisionOf(target));
  });
});
