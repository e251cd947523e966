import { describe, expect, it } from 'vitest';
import type { Role } from '../../../api/modelserving.js';
import { canonicalJson, controllerRevisionFor, indexRevisions, revisionOf, revisionsEquivalentTo, roleTemplateHash } from './revision.js';
import { makeMS, roleSpec } from './test-fixtures.js';

const roles = (spec: Record<string, unknown>[]): Role[] =>
  makeMS({ rolloutStrategy: { type: 'RoleRollingUpdate' }, template: { roles: spec } }).spec.template.roles;

describe('revision hash', () => {
  it('is deterministic and looks like a Kubernetes hash suffix', () => {
    const r = roles([roleSpec('prefill', { workers: 1 })]);
    expect(revisionOf(r)).toBe(revisionOf(structuredClone(r)));
    expect(revisionOf(r)).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{6,10}$/);
  });

  it('ignores replicas, maxUnavailable and partition (they do not change pods)', () => {
    const a = roles([roleSpec('prefill', { replicas: 1 })]);
    const b = roles([{ ...roleSpec('prefill', { replicas: 3 }), maxUnavailable: 2, partition: 1 }]);
    expect(revisionOf(a)).toBe(revisionOf(b));
    expect(roleTemplateHash(a[0] as Role)).toBe(roleTemplateHash(b[0] as Role));
  });

  it('changes with the template, worker count and role order', () => {
    const base = revisionOf(roles([roleSpec('a'), roleSpec('b')]));
    expect(revisionOf(roles([roleSpec('a', { image: 'vllm:v2' }), roleSpec('b')]))).not.toBe(base);
    expect(revisionOf(roles([roleSpec('a', { workers: 1 }), roleSpec('b')]))).not.toBe(base);
    expect(revisionOf(roles([roleSpec('b'), roleSpec('a')]))).not.toBe(base);
  });

  it('does not roll for empty values or differently written quantities', () => {
    const plain = { name: 'm', image: 'i', resources: { requests: { cpu: 1, memory: '1Gi' } } };
    const noisy = { name: 'm', image: 'i', env: [], securityContext: null, resources: { requests: { cpu: '1000m', memory: '1024Mi' }, limits: {} } };
    expect(canonicalJson(plain)).toBe(canonicalJson(noisy));
  });

  it("does not roll when the CRD's schema defaults a container port's protocol to TCP", () => {
    // The CRD embeds the PodSpec schema, whose list-map key `protocol` must carry its default: every
    // template stored before it reads back with `protocol: TCP` added, and must keep its revision.
    const before = { name: 'm', image: 'i', ports: [{ containerPort: 8000 }, { containerPort: 53, protocol: 'UDP' }] };
    const after = { name: 'm', image: 'i', ports: [{ containerPort: 8000, protocol: 'TCP' }, { containerPort: 53, protocol: 'UDP' }] };
    expect(canonicalJson(after)).toBe(canonicalJson(before));
    expect(canonicalJson(after)).not.toBe(canonicalJson({ ...before, ports: [{ containerPort: 8000, protocol: 'UDP' }, before.ports[1]] }));
  });
});

describe('ControllerRevision', () => {
  const ms = makeMS();
  const rev = revisionOf(ms.spec.template.roles);

  it('records the roles under data.data, owned by the ModelServing, named <ms>-<revision>', () => {
    const cr = controllerRevisionFor(ms, rev, ms.spec.template.roles);
    expect(cr.metadata?.name).toBe(`llm-${rev}`);
    expect(cr.metadata?.labels).toEqual({ 'modelserving.volcano.sh/name': 'llm', 'modelserving.volcano.sh/revision': rev });
    expect(cr.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'ModelServing', uid: 'uid-1', controller: true, blockOwnerDeletion: true });
    expect(cr.revision).toBe(1);
    expect(cr.data).toEqual({ data: ms.spec.template.roles });
  });

  it('indexes revisions by label and reports unreadable ones', () => {
    const good = controllerRevisionFor(ms, rev, ms.spec.template.roles);
    const bad = { ...good, metadata: { ...good.metadata, name: 'llm-bad', labels: { ...good.metadata?.labels, 'modelserving.volcano.sh/revision': 'bad' } }, data: { data: 'x' } };
    const other = { ...good, metadata: { ...good.metadata, labels: { 'modelserving.volcano.sh/name': 'other' } } };
    const { byName, unreadable } = indexRevisions('llm', [good, bad, other]);
    expect([...byName.keys()]).toEqual([rev]);
    expect(byName.get(rev)?.canonical).toBe(rev);
    expect(unreadable).toEqual(['llm-bad']);
  });

  it("treats a revision written by Kthena for the same roles as the update revision", () => {
    // Go's JSON of the same roles: explicit empty fields, quantities as strings, different name.
    const kthenaRoles = [
      {
        name: 'prefill',
        replicas: 1,
        workerReplicas: 0,
        maxUnavailable: 1,
        entryTemplate: { spec: { containers: [{ name: 'main', image: 'vllm:v1', resources: {} }] } },
      },
    ];
    const kthena = { revision: 1, metadata: { name: 'llm-7c9f8d6b4', labels: { 'modelserving.volcano.sh/name': 'llm', 'modelserving.volcano.sh/revision': '7c9f8d6b4' } }, data: { data: kthenaRoles } };
    const { byName } = indexRevisions('llm', [kthena]);
    expect([...revisionsEquivalentTo(rev, byName)].sort()).toEqual(['7c9f8d6b4', rev].sort());
  });
});
