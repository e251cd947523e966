import { describe, expect, it } from 'vitest';
import { podFacts, type PodFacts } from './observed.js';
import { instanceReady, roleKey, roleStateOf, roleTransitions, type RoleStatusSnapshot, type RoleState } from './role-status.js';
import { pod } from './test-fixtures.js';

const facts = (o: Parameters<typeof pod>[0]): PodFacts => podFacts(pod(o), 'llm') as PodFacts;

describe('role readiness', () => {
  const entry = (ready: boolean) => facts({ group: 'llm-0', role: 'p', index: 0, podIndex: 0, ready });
  const worker = (i: number, ready: boolean) => facts({ group: 'llm-0', role: 'p', index: 0, podIndex: i, ready });

  it('is not Running while a worker is not ready', () => {
    expect(roleStateOf(false, instanceReady([entry(true), worker(1, true), worker(2, false)], 3))).toBe('Creating');
  });

  it('is Running once the last worker is ready', () => {
    expect(roleStateOf(false, instanceReady([entry(true), worker(1, true), worker(2, true)], 3))).toBe('Running');
  });

  it('needs exactly the expected pods, none terminating', () => {
    expect(instanceReady([entry(true), worker(1, true)], 3)).toBe(false);
    expect(instanceReady([entry(true), facts({ group: 'llm-0', role: 'p', index: 0, podIndex: 1, terminating: true })], 2)).toBe(false);
  });

  it('never turns a Deleting role Running', () => {
    expect(roleStateOf(true, true)).toBe('Deleting');
  });
});

describe('role transitions (seed 000 events)', () => {
  const snap = (states: Record<string, RoleState>): RoleStatusSnapshot => ({
    groups: {},
    roles: Object.fromEntries(
      Object.entries(states).map(([id, state]) => [roleKey('llm-0', id), { group: 'llm-0', roleName: id.replace(/-\d+$/, ''), roleId: id, state, revision: 'r', templateHash: 'h' }]),
    ),
  });

  it('announces a new role as Normal RoleCreating, even on the first reconcile', () => {
    const t = roleTransitions(undefined, snap({ 'prefill-0': 'Creating' }), new Set([roleKey('llm-0', 'prefill-0')]));
    expect(t).toEqual([
      {
        group: 'llm-0',
        roleName: 'prefill',
        roleId: 'prefill-0',
        from: undefined,
        to: 'Creating',
        type: 'Normal',
        reason: 'RoleCreating',
        message: 'Role prefill/prefill-0 in ServingGroup llm-0 is now Creating',
      },
    ]);
  });

  it('rebuilds silently when the datastore is empty', () => {
    expect(roleTransitions(undefined, snap({ 'prefill-0': 'Running' }), new Set())).toEqual([]);
  });

  it('announces Running, Deleting, and a Running role falling back to Creating as a Warning', () => {
    const t = roleTransitions(
      snap({ 'a-0': 'Creating', 'b-0': 'Running', 'c-0': 'Running', 'd-0': 'Running' }),
      snap({ 'a-0': 'Running', 'b-0': 'Creating', 'c-0': 'Deleting', 'd-0': 'Running' }),
      new Set(),
    );
    expect(t.map((x) => [x.roleId, x.type, x.reason])).toEqual([
      ['a-0', 'Normal', 'RoleRunning'],
      ['b-0', 'Warning', 'RoleCreating'],
      ['c-0', 'Normal', 'RoleDeleting'],
    ]);
  });

  it('says a failed Running role fell back before it is deleted', () => {
    const t = roleTransitions(snap({ 'a-0': 'Running' }), snap({ 'a-0': 'Deleting' }), new Set(), new Set([roleKey('llm-0', 'a-0')]));
    expect(t.map((x) => [x.type, x.reason])).toEqual([
      ['Warning', 'RoleCreating'],
      ['Normal', 'RoleDeleting'],
    ]);
  });

  it('announces a role recreated under the same id', () => {
    const t = roleTransitions(snap({ 'a-0': 'Deleting' }), snap({ 'a-0': 'Creating' }), new Set([roleKey('llm-0', 'a-0')]));
    expect(t.map((x) => [x.type, x.reason])).toEqual([['Normal', 'RoleCreating']]);
  });

  it('does not announce a deletion rolled back', () => {
    expect(roleTransitions(snap({ 'a-0': 'Deleting' }), snap({ 'a-0': 'Running' }), new Set())).toEqual([]);
  });
});
