import { describe, expect, it } from 'vitest';
import { roleTemplateHash } from './revision.js';
import type { RoleRecord, RoleStatusSnapshot } from './role-status.js';
import { NOT_READY_LISTED, roleSummaries } from './status-roles.js';
import { Steps, makeMS, roleSpec } from './test-fixtures.js';

const rec = (group: string, roleName: string, index: number, state: RoleRecord['state'], templateHash: string): RoleRecord => ({
  group,
  roleName,
  roleId: `${roleName}-${index}`,
  state,
  revision: 'r',
  templateHash,
});

describe('status.roles', () => {
  const ms = makeMS({ template: { roles: [roleSpec('prefill', { replicas: 2 }), roleSpec('decode')] } });
  const [prefill, decode] = ms.spec.template.roles;
  const hp = roleTemplateHash(prefill!);
  const hd = roleTemplateHash(decode!);

  it('sums each role over the groups: instances, ready, updated; names the ones not ready', () => {
    const snapshot: RoleStatusSnapshot = {
      groups: {},
      roles: Object.fromEntries(
        [
          rec('llm-0', 'prefill', 0, 'Running', hp),
          rec('llm-0', 'prefill', 1, 'Creating', hp),
          rec('llm-0', 'decode', 0, 'Running', 'old'),
          rec('llm-1', 'prefill', 0, 'Deleting', 'old'),
          rec('llm-1', 'decode', 0, 'Creating', hd),
          rec('llm-1', 'router', 0, 'Running', 'x'),
        ].map((r) => [`${r.group}/${r.roleId}`, r]),
      ),
    };
    expect(roleSummaries(ms.spec.template.roles, snapshot)).toEqual([
      { name: 'prefill', replicas: 2, readyReplicas: 1, updatedReplicas: 2, templateHash: hp, notReady: ['llm-0/prefill-1'] },
      { name: 'decode', replicas: 2, readyReplicas: 1, updatedReplicas: 1, templateHash: hd, notReady: ['llm-1/decode-0'] },
      { name: 'router', replicas: 1, readyReplicas: 1, updatedReplicas: 0 },
    ]);
  });

  it(`lists at most ${NOT_READY_LISTED} instances not ready, by ordinal (llm-2 before llm-10)`, () => {
    const roles = Array.from({ length: 12 }, (_, i) => rec(`llm-${11 - i}`, 'decode', 0, 'Creating', hd));
    const [, d] = roleSummaries(ms.spec.template.roles, { groups: {}, roles: Object.fromEntries(roles.map((r) => [`${r.group}/${r.roleId}`, r])) });
    expect(d?.notReady).toHaveLength(NOT_READY_LISTED);
    expect(d?.notReady?.slice(0, 3)).toEqual(['llm-0/decode-0', 'llm-1/decode-0', 'llm-2/decode-0']);
    expect(d).toMatchObject({ replicas: 12, readyReplicas: 0 });
  });

  it('is on the status the plan computes', () => {
    const s = new Steps(makeMS({ replicas: 2, template: { roles: [roleSpec('prefill', { replicas: 2 }), roleSpec('decode')] } }));
    s.converge();
    expect(s.ms.status?.roles).toEqual([
      { name: 'prefill', replicas: 4, readyReplicas: 4, updatedReplicas: 4, templateHash: hp },
      { name: 'decode', replicas: 2, readyReplicas: 2, updatedReplicas: 2, templateHash: hd },
    ]);
  });
});
