import { describe, expect, it } from 'vitest';
import type { RoleStatusSnapshot } from './plan/role-status.js';
import { decodeRoleStatus, encodeRoleStatus, roleStatusKey, snapshotsEqual } from './role-store.js';

const snapshot: RoleStatusSnapshot = {
  groups: { 'llm-0': { state: 'Running', revision: 'r1' } },
  roles: {
    'llm-0/prefill-0': { group: 'llm-0', roleName: 'prefill', roleId: 'prefill-0', state: 'Running', revision: 'r1', templateHash: 'h1' },
    'llm-0/decode-0': { group: 'llm-0', roleName: 'decode', roleId: 'decode-0', state: 'Creating', revision: 'r1', templateHash: 'h2' },
  },
};

function hashOf(fields: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) out[fields[i] ?? ''] = fields[i + 1] ?? '';
  return out;
}

describe('role datastore encoding', () => {
  it('keys one hash per ModelServing under the prefix (the ops dump finds it by *modelserving:roles:)', () => {
    expect(roleStatusKey('ripple', 'ns', 'llm')).toBe('ripple:modelserving:roles:ns/llm');
  });

  it('round-trips a snapshot and its outbox', () => {
    const hash = hashOf(encodeRoleStatus(snapshot));
    hash.uid = 'u1';
    hash.seq = '4';
    hash.outbox = JSON.stringify([{ group: 'llm-0', roleName: 'decode', roleId: 'decode-0', to: 'Creating', type: 'Normal', reason: 'RoleCreating', message: 'm' }]);
    const back = decodeRoleStatus('ns', 'llm', hash);
    expect(back.snapshot).toEqual(snapshot);
    expect(back).toMatchObject({ uid: 'u1', seq: '4' });
    expect(back.outbox).toEqual([{ group: 'llm-0', roleName: 'decode', roleId: 'decode-0', from: undefined, to: 'Creating', type: 'Normal', reason: 'RoleCreating', message: 'm' }]);
  });

  it('drops fields it cannot read instead of failing (the planner rebuilds them from the pods)', () => {
    const back = decodeRoleStatus('ns', 'llm', { 'role:llm-0/x-0': '{not json', 'group:llm-0': JSON.stringify({ state: 'Weird', revision: 'r' }), outbox: '[1]' });
    expect(back.snapshot).toEqual({ groups: {}, roles: {} });
    expect(back.outbox).toEqual([]);
  });

  it('compares snapshots regardless of order', () => {
    const reordered: RoleStatusSnapshot = {
      groups: { 'llm-0': { revision: 'r1', state: 'Running' } },
      roles: Object.fromEntries(Object.entries(snapshot.roles).reverse()),
    };
    expect(snapshotsEqual(snapshot, reordered)).toBe(true);
    expect(snapshotsEqual(undefined, snapshot)).toBe(false);
    expect(snapshotsEqual(snapshot, { ...snapshot, groups: { 'llm-0': { state: 'Deleting', revision: 'r1' } } })).toBe(false);
  });
});
