import { describe, expect, it } from 'vitest';
import type { Role } from '../../../api/modelserving.js';
import { resolveMaxUnavailable, resolvePartition, revisionForNewGroup, roleTemplateForNewInstance } from './partition.js';
import { indexRevisions, controllerRevisionFor, revisionOf } from './revision.js';
import { makeMS, roleSpec } from './test-fixtures.js';
import { ordinalsToCreate } from './scale.js';

describe('partition values', () => {
  it('rounds percentages up', () => {
    expect(resolvePartition('50%', 3)).toBe(2);
    expect(resolvePartition('1%', 10)).toBe(1);
    expect(resolvePartition('0%', 10)).toBe(0);
    expect(resolvePartition('100%', 5)).toBe(5);
    expect(resolvePartition(3, 5)).toBe(3);
    expect(resolvePartition(undefined, 5)).toBe(0);
  });

  it('rounds maxUnavailable down but never to 0 while there are replicas', () => {
    expect(resolveMaxUnavailable('50%', 5)).toBe(2);
    expect(resolveMaxUnavailable('10%', 5)).toBe(1);
    expect(resolveMaxUnavailable(2, 4)).toBe(2);
    expect(resolveMaxUnavailable(1, 0)).toBe(1);
    expect(resolveMaxUnavailable('50%', 0)).toBe(0);
  });
});

describe('revision of a new ServingGroup', () => {
  const v1 = makeMS().spec.template.roles;
  const v2 = makeMS({ template: { roles: [roleSpec('prefill', { image: 'vllm:v2' })] } }).spec.template.roles;
  const r1 = revisionOf(v1);
  const r2 = revisionOf(v2);
  const known = indexRevisions('llm', [controllerRevisionFor(makeMS(), r1, v1)]).byName;
  const update = { revision: r2, roles: v2 };
  const plan = (partition: number, existing: number[], replicas: number, current: string | undefined) =>
    ordinalsToCreate(replicas, existing).map((o) => [o, revisionForNewGroup(o, partition, update, current, known).revision]);

  it('partition 2, groups {0,1} -> 4: 2 and 3 on the new revision', () => {
    expect(plan(2, [0, 1], 4, r1)).toEqual([
      [2, r2],
      [3, r2],
    ]);
  });

  it('partition 2, groups {0,2} -> 4: 1 on the current revision, 3 on the new', () => {
    expect(plan(2, [0, 2], 4, r1)).toEqual([
      [1, r1],
      [3, r2],
    ]);
  });

  it('no partition, groups {0,1} -> 3: 2 on the new revision', () => {
    expect(plan(0, [0, 1], 3, r1)).toEqual([[2, r2]]);
  });

  it('partition 3, groups {0,3,4} -> 5: 1 and 2 on the current revision, with its roles', () => {
    expect(plan(3, [0, 3, 4], 5, r1)).toEqual([
      [1, r1],
      [2, r1],
    ]);
    expect(revisionForNewGroup(1, 3, update, r1, known).roles).toEqual(v1);
  });

  it('uses the update revision when there is no current revision yet', () => {
    expect(plan(3, [], 2, undefined)).toEqual([
      [0, r2],
      [1, r2],
    ]);
  });

  it('falls back to the spec, labelled as the update revision, when the ControllerRevision is gone', () => {
    const choice = revisionForNewGroup(0, 2, update, 'vanished', known);
    expect(choice.revision).toBe(r2);
    expect(choice.fallback).toMatch(/not found/);
  });

  it('gives a role instance below the role partition the current revision of that role', () => {
    const spec = v2[0] as Role;
    expect(roleTemplateForNewInstance(0, 1, spec, r2, r1, known)).toEqual({ revision: r1, role: v1[0] });
    expect(roleTemplateForNewInstance(1, 1, spec, r2, r1, known)).toEqual({ revision: r2, role: spec });
  });
});
