import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { describeAction, type Action } from './actions.js';
import { LABEL_GROUP_NAME, LABEL_REVISION, LABEL_ROLE } from './names.js';
import { planModelServing } from './plan.js';
import { controllerRevisionFor, revisionOf } from './revision.js';
import { Steps, T0, makeMS, pod, roleSpec } from './test-fixtures.js';

type Spec = Record<string, unknown> & { template: { roles: Array<Record<string, unknown>> } };
const image = (img: string) => (spec: Record<string, unknown>) => {
  for (const r of (spec as Spec).template.roles) {
    for (const t of [r.entryTemplate, r.workerTemplate] as Array<{ spec: { containers: Array<{ image: string }> } } | undefined>) {
      if (t) t.spec.containers[0]!.image = img;
    }
  }
};
const kinds = (actions: Action[]) => actions.map(describeAction);
const labelOf = (p: V1Pod, key: string) => p.metadata?.labels?.[key] ?? '';
const uids = (s: Steps, role: string) =>
  [...s.pods.values()].filter((p) => labelOf(p, LABEL_ROLE) === role).map((p) => `${p.metadata?.name}=${p.metadata?.uid}`);

/** Groups whose pods all exist, run and are ready, counted from the pods themselves. */
function readyGroups(s: Steps): number {
  const roles = s.ms.spec.template.roles;
  let n = 0;
  for (let o = 0; o < s.ms.spec.replicas; o++) {
    const group = `llm-${o}`;
    const pods = [...s.pods.values()].filter((p) => labelOf(p, LABEL_GROUP_NAME) === group);
    const expected = roles.reduce((sum, r) => sum + r.replicas * (1 + r.workerReplicas), 0);
    const ok = pods.filter((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    if (ok.length === expected && pods.length === expected) n++;
  }
  return n;
}

describe('creating a ModelServing', () => {
  const ms = makeMS({ replicas: 2, template: { roles: [roleSpec('prefill', { workers: 1 }), roleSpec('decode', { replicas: 2 })] } });

  it('records the revision first, then creates every pod and the headless Services', () => {
    const rev = revisionOf(ms.spec.template.roles);
    expect(kinds(planModelServing(new Steps(ms).observed()).actions)).toEqual([
      `createControllerRevision llm-${rev}`,
      'createPod llm-0-prefill-0-0',
      'createPod llm-0-prefill-0-1',
      'createPod llm-0-decode-0-0',
      'createPod llm-0-decode-1-0',
      'createPod llm-1-prefill-0-0',
      'createPod llm-1-prefill-0-1',
      'createPod llm-1-decode-0-0',
      'createPod llm-1-decode-1-0',
      'createService llm-0-prefill-0-0',
      'createService llm-1-prefill-0-0',
    ]);
  });

  it('announces each new role, then each role that runs, and becomes Available', () => {
    const s = new Steps(ms);
    const first = s.plan();
    expect(first.roleTransitions.map((t) => t.message)).toContain('Role decode/decode-1 in ServingGroup llm-1 is now Creating');
    expect(first.roleTransitions.every((t) => t.reason === 'RoleCreating' && t.type === 'Normal')).toBe(true);
    expect(first.status.conditions?.map((c) => [c.type, c.status])).toEqual([['Progressing', 'True']]);
    s.apply(first);
    s.ready();
    const second = s.plan();
    expect(second.actions).toEqual([]);
    expect(second.roleTransitions.map((t) => t.reason)).toEqual(Array(6).fill('RoleRunning'));
    expect(second.status).toMatchObject({ replicas: 2, availableReplicas: 2, updatedReplicas: 2, currentReplicas: 2, observedGeneration: 1 });
    expect(second.status.conditions?.map((c) => [c.type, c.status])).toEqual([
      ['Available', 'True'],
      ['Progressing', 'False'],
    ]);
    s.apply(second);
    const third = s.plan();
    expect(third.status).toEqual(s.ms.status);
    expect(third.roleTransitions).toEqual([]);
  });

  it('creates nothing else when recording the revision fails (it comes first)', () => {
    const plan = new Steps(ms).plan();
    expect(plan.actions[0]?.kind).toBe('createControllerRevision');
    expect(plan.actions.slice(1).every((a) => a.kind !== 'createControllerRevision')).toBe(true);
  });

  it('does nothing for a ModelServing being deleted', () => {
    const deleting = { ...ms, metadata: { ...ms.metadata, deletionTimestamp: new Date(T0).toISOString() } };
    expect(new Steps(deleting).plan().actions).toEqual([]);
  });

  it('creates at most maxGroupCreatesPerPlan groups at once and comes back at once for the rest', () => {
    const big = new Steps(makeMS({ replicas: 2147483647 }));
    const plan = big.plan({ options: { maxGroupCreatesPerPlan: 3 } });
    expect(plan.actions.filter((a) => a.kind === 'createPod')).toHaveLength(3);
    expect(plan.requeueAfterSeconds).toBe(0);
  });
});

describe('lifecycle: image change rolls every group', () => {
  it('replaces groups one by one, and keeps the old revision as history', () => {
    const s = new Steps(makeMS({ replicas: 3, template: { roles: [roleSpec('prefill', { workers: 1 })] } }));
    s.converge();
    const v1 = s.ms.status?.updateRevision;
    s.setSpec(image('vllm:v2'));
    s.converge();
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(Object.values(s.groupRevisions())).toEqual([v2, v2, v2]);
    expect([...s.pods.values()].every((p) => (p.spec?.containers[0] as { image: string }).image === 'vllm:v2')).toBe(true);
    expect(s.ms.status).toMatchObject({ currentRevision: v2, updateRevision: v2, replicas: 3, availableReplicas: 3, updatedReplicas: 3, currentReplicas: 3 });
    expect([...s.revisions.keys()].sort()).toEqual([`llm-${v1}`, `llm-${v2}`].sort());
    expect(v1).not.toBe(v2);
  });

  it('with maxUnavailable 2 of 4 never has more than 2 groups unavailable', () => {
    const s = new Steps(makeMS({ replicas: 4, rolloutStrategy: { rollingUpdateConfiguration: { maxUnavailable: 2 } } }));
    s.converge();
    s.setSpec(image('vllm:v2'));
    let worst = 0;
    for (let i = 0; i < 20; i++) {
      const plan = s.plan();
      s.apply(plan);
      worst = Math.max(worst, 4 - readyGroups(s));
      s.gone();
      worst = Math.max(worst, 4 - readyGroups(s));
      s.ready();
      if (plan.actions.length === 0) break;
    }
    expect(worst).toBe(2);
    expect(new Set(Object.values(s.groupRevisions()))).toEqual(new Set([revisionOf(s.ms.spec.template.roles)]));
  });

  it('reports UpdateInProgress while it rolls', () => {
    const s = new Steps(makeMS({ replicas: 2 }));
    s.converge();
    s.setSpec(image('vllm:v2'));
    const plan = s.plan();
    expect(kinds(plan.actions)).toContain('deletePod llm-1-prefill-0-0');
    expect(plan.status.conditions?.find((c) => c.status === 'True')?.type).toBe('UpdateInProgress');
    expect(plan.status.observedGeneration).toBe(2);
  });
});

describe('partition (seed 004)', () => {
  it('Story 1: a missing protected ordinal is refilled from CurrentRevision, new ordinals get the new revision', () => {
    const s = new Steps(makeMS({ replicas: 3, rolloutStrategy: { rollingUpdateConfiguration: { partition: 3 } } }));
    s.converge();
    const v1 = revisionOf(s.ms.spec.template.roles);
    // Stage 1: R-0..R-2 exist. A new template arrives; nothing below the partition rolls.
    s.setSpec(image('vllm:v2'));
    s.converge();
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v1 });
    expect(s.ms.status).toMatchObject({ currentRevision: v1, updateRevision: v2 });
    // Stage 2: R-1 is lost with its node.
    for (const [name, p] of s.pods) if (labelOf(p, LABEL_GROUP_NAME) === 'llm-1') s.pods.delete(name);
    // Stage 3: scale up to 5. R-1 first, on the current revision; then on the new one.
    s.setSpec((spec) => (spec.replicas = 5));
    const plan = s.plan();
    expect(kinds(plan.actions)).toEqual(['createPod llm-1-prefill-0-0', 'createPod llm-3-prefill-0-0', 'createPod llm-4-prefill-0-0']);
    const created = plan.actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod] : []));
    expect(created.map((p) => labelOf(p, LABEL_REVISION))).toEqual([v1, v2, v2]);
    expect(created.map((p) => (p.spec?.containers[0] as { image: string }).image)).toEqual(['vllm:v1', 'vllm:v2', 'vllm:v2']);
    s.apply(plan);
    s.converge();
    // Stage 6: R-0..R-2 on the current revision, R-3 and R-4 on the new one.
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v1, 'llm-3': v2, 'llm-4': v2 });
    expect(s.ms.status).toMatchObject({ currentRevision: v1, updateRevision: v2, replicas: 5, updatedReplicas: 2, currentReplicas: 3, availableReplicas: 5 });
  });

  it('Story 2: a rolling update touches only ordinals >= partition, highest first', () => {
    const s = new Steps(makeMS({ replicas: 5, rolloutStrategy: { rollingUpdateConfiguration: { partition: 2 } } }));
    s.converge();
    const v1 = revisionOf(s.ms.spec.template.roles);
    s.setSpec(image('vllm:v2'));
    const v2 = revisionOf(s.ms.spec.template.roles);
    const replaced: string[] = [];
    for (let i = 0; i < 20; i++) {
      const plan = s.plan();
      replaced.push(...plan.actions.filter((a) => a.kind === 'deletePod').map((a) => (a.kind === 'deletePod' ? a.name : '')));
      s.apply(plan);
      s.gone();
      s.ready();
      if (plan.actions.length === 0) break;
    }
    expect(replaced).toEqual(['llm-4-prefill-0-0', 'llm-3-prefill-0-0', 'llm-2-prefill-0-0']);
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v2, 'llm-3': v2, 'llm-4': v2 });
    expect(s.ms.status).toMatchObject({ currentRevision: v1, updateRevision: v2, updatedReplicas: 3, currentReplicas: 2 });
    expect(s.ms.status?.conditions?.find((c) => c.status === 'True')?.type).toBe('Available');
  });

  it('partition 3 of 5: a protected group is rebuilt on its revision; scale to 7 and back to 3', () => {
    const s = new Steps(makeMS({ replicas: 5, rolloutStrategy: { rollingUpdateConfiguration: { partition: 3 } } }));
    s.converge();
    const v1 = revisionOf(s.ms.spec.template.roles);
    s.setSpec(image('vllm:v2'));
    s.converge();
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v1, 'llm-3': v2, 'llm-4': v2 });
    // A pod of group 1 is deleted: rebuilt on the old revision and image.
    s.pods.delete('llm-1-prefill-0-0');
    s.converge();
    expect(s.pods.get('llm-1-prefill-0-0')?.metadata?.labels?.[LABEL_REVISION]).toBe(v1);
    expect((s.pods.get('llm-1-prefill-0-0')?.spec?.containers[0] as { image: string }).image).toBe('vllm:v1');
    s.setSpec((spec) => (spec.replicas = 7));
    s.converge();
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v1, 'llm-3': v2, 'llm-4': v2, 'llm-5': v2, 'llm-6': v2 });
    s.setSpec((spec) => (spec.replicas = 3));
    s.converge();
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v1 });
    expect(s.ms.status).toMatchObject({ replicas: 3, updatedReplicas: 0, currentReplicas: 3, availableReplicas: 3 });
  });

  it('protects by ordinal, not by list position (kthena#1797)', () => {
    // Groups 0, 2, 3, 4 on v1 (1 is missing), partition 2: only ordinals 0 and 1 are protected.
    const ms = makeMS({ replicas: 4, rolloutStrategy: { rollingUpdateConfiguration: { partition: 2, maxUnavailable: 4 } } });
    const v1 = revisionOf(ms.spec.template.roles);
    const s = new Steps(ms);
    s.revisions.set(`llm-${v1}`, controllerRevisionFor(ms, v1, ms.spec.template.roles));
    for (const o of [0, 2, 3, 4]) s.pods.set(`llm-${o}-prefill-0-0`, pod({ group: `llm-${o}`, role: 'prefill', index: 0, revision: v1 }));
    s.ms = { ...s.ms, status: { currentRevision: v1, updateRevision: v1 } };
    s.setSpec(image('vllm:v2'));
    const plan = s.plan();
    // 4 is beyond replicas and goes; 2 and 3 are outside the partition and roll; 0 stays.
    expect(kinds(plan.actions).filter((k) => k.startsWith('deletePod')).sort()).toEqual([
      'deletePod llm-2-prefill-0-0',
      'deletePod llm-3-prefill-0-0',
      'deletePod llm-4-prefill-0-0',
    ]);
    s.apply(plan);
    s.converge();
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v2, 'llm-3': v2 });
  });

  it('rounds a percentage partition up', () => {
    const s = new Steps(makeMS({ replicas: 3, rolloutStrategy: { rollingUpdateConfiguration: { partition: '50%' } } }));
    s.converge();
    const v1 = revisionOf(s.ms.spec.template.roles);
    s.setSpec(image('vllm:v2'));
    s.converge();
    expect(Object.values(s.groupRevisions())).toEqual([v1, v1, revisionOf(s.ms.spec.template.roles)]);
  });
});

describe('headless Services', () => {
  it("exist for role instances with a worker template (Kthena's rule), even with 0 workers", () => {
    const s = new Steps(
      makeMS({
        template: {
          roles: [roleSpec('solo'), { ...roleSpec('empty'), workerTemplate: { spec: { containers: [] } } }, roleSpec('multi', { replicas: 2, workers: 1 })],
        },
      }),
    );
    const created = s.plan().actions.filter((a) => a.kind === 'createService');
    expect(created.map(describeAction)).toEqual([
      'createService llm-0-empty-0-0',
      'createService llm-0-multi-0-0',
      'createService llm-0-multi-1-0',
    ]);
    const svc = created[2]?.kind === 'createService' ? created[2].service : undefined;
    expect(svc?.spec).toEqual({
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: {
        'modelserving.volcano.sh/group-name': 'llm-0',
        'modelserving.volcano.sh/role': 'multi',
        'modelserving.volcano.sh/role-id': 'multi-1',
        'modelserving.volcano.sh/entry': 'true',
      },
    });
  });

  it('are recreated when deleted, and removed with their role instance', () => {
    const s = new Steps(makeMS({ template: { roles: [roleSpec('multi', { replicas: 2, workers: 1 })] } }));
    s.converge();
    s.services.delete('llm-0-multi-0-0');
    expect(kinds(s.plan().actions)).toEqual(['createService llm-0-multi-0-0']);
    s.converge();
    s.setSpec((spec) => ((spec as Spec).template.roles[0]!.replicas = 1));
    expect(kinds(s.plan().actions)).toEqual(['deletePod llm-0-multi-1-0', 'deletePod llm-0-multi-1-1', 'deleteService llm-0-multi-1-0']);
  });
});

describe('scaling', () => {
  it('scales groups down removing not-ready groups first, with their Services', () => {
    const s = new Steps(makeMS({ replicas: 3, template: { roles: [roleSpec('prefill', { workers: 1 })] } }));
    s.converge();
    s.pods.get('llm-0-prefill-0-1')!.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] };
    s.setSpec((spec) => (spec.replicas = 2));
    const plan = s.plan();
    expect(kinds(plan.actions)).toEqual(['deletePod llm-0-prefill-0-0', 'deletePod llm-0-prefill-0-1', 'deleteService llm-0-prefill-0-0']);
    s.apply(plan);
    s.converge();
    expect(Object.keys(s.groupRevisions())).toEqual(['llm-1', 'llm-2']);
    expect([...s.services.keys()].sort()).toEqual(['llm-1-prefill-0-0', 'llm-2-prefill-0-0']);
  });

  it('scales roles up and down inside each group without rolling', () => {
    const s = new Steps(makeMS({ replicas: 2, template: { roles: [roleSpec('prefill'), roleSpec('decode', { replicas: 1 })] } }));
    s.converge();
    const before = uids(s, 'prefill');
    s.setSpec((spec) => ((spec as Spec).template.roles[1]!.replicas = 3));
    const up = s.plan();
    expect(kinds(up.actions)).toEqual([
      'createPod llm-0-decode-1-0',
      'createPod llm-0-decode-2-0',
      'createPod llm-1-decode-1-0',
      'createPod llm-1-decode-2-0',
    ]);
    expect(up.roleStatus.groups['llm-0']?.state).toBe('Scaling');
    s.apply(up);
    s.converge();
    s.setSpec((spec) => ((spec as Spec).template.roles[1]!.replicas = 1));
    s.converge();
    expect(s.livePodNames()).toEqual(['llm-0-decode-0-0', 'llm-0-prefill-0-0', 'llm-1-decode-0-0', 'llm-1-prefill-0-0']);
    expect(uids(s, 'prefill')).toEqual(before);
  });
});

describe('recovery', () => {
  const twoRoles = (policy: string) =>
    makeMS({ replicas: 2, recoveryPolicy: policy, template: { roles: [roleSpec('prefill', { workers: 1 }), roleSpec('decode')] } });

  it('ServingGroupRecreate: deleting one pod replaces the whole group under the same name', () => {
    const s = new Steps(twoRoles('ServingGroupRecreate'));
    s.converge();
    const other = uids(s, 'decode').filter((u) => u.startsWith('llm-1'));
    s.pods.delete('llm-0-prefill-0-1');
    const plan = s.plan();
    expect(kinds(plan.actions)).toEqual(['deletePod llm-0-prefill-0-0', 'deletePod llm-0-decode-0-0', 'deleteService llm-0-prefill-0-0']);
    expect(plan.roleTransitions.map((t) => `${t.roleId}:${t.type}:${t.reason}`)).toEqual([
      'prefill-0:Warning:RoleCreating',
      'prefill-0:Normal:RoleDeleting',
      'decode-0:Normal:RoleDeleting',
    ]);
    s.apply(plan);
    s.converge();
    expect(s.livePodNames().filter((n) => n.startsWith('llm-0'))).toEqual(['llm-0-decode-0-0', 'llm-0-prefill-0-0', 'llm-0-prefill-0-1']);
    expect(uids(s, 'decode').filter((u) => u.startsWith('llm-1'))).toEqual(other);
  });

  it('RoleRecreate: a failed pod replaces only its role instance', () => {
    const s = new Steps(twoRoles('RoleRecreate'));
    s.converge();
    const decode = uids(s, 'decode');
    s.pods.get('llm-1-prefill-0-1')!.status = { phase: 'Failed', conditions: [{ type: 'Ready', status: 'False' }] };
    const plan = s.plan();
    expect(kinds(plan.actions)).toEqual(['deletePod llm-1-prefill-0-0', 'deletePod llm-1-prefill-0-1', 'deleteService llm-1-prefill-0-0']);
    s.apply(plan);
    s.converge();
    expect(s.livePodNames()).toHaveLength(6);
    expect(uids(s, 'decode')).toEqual(decode);
  });

  it('None: only the failed pod is deleted, and it is created again (kthena#1661)', () => {
    const s = new Steps(twoRoles('None'));
    s.converge();
    const entry = s.pods.get('llm-0-prefill-0-0')?.metadata?.uid;
    s.pods.get('llm-0-prefill-0-1')!.status = { phase: 'Failed', conditions: [{ type: 'Ready', status: 'False' }] };
    const plan = s.plan();
    expect(kinds(plan.actions)).toEqual(['deletePod llm-0-prefill-0-1']);
    s.apply(plan);
    s.gone();
    expect(kinds(s.plan().actions)).toEqual(['createPod llm-0-prefill-0-1']);
    s.converge();
    expect(s.pods.get('llm-0-prefill-0-0')?.metadata?.uid).toBe(entry);
    expect(s.livePodNames()).toHaveLength(6);
  });

  it('waits restartGracePeriodSeconds before recovering a crashing pod', () => {
    const s = new Steps(makeMS({ template: { restartGracePeriodSeconds: 60, roles: [roleSpec('prefill')] } }));
    s.converge();
    s.pods.set('llm-0-prefill-0-0', { ...pod({ group: 'llm-0', role: 'prefill', index: 0, ready: false, phase: 'Running', restarts: 1, notReadySince: T0 }), metadata: s.pods.get('llm-0-prefill-0-0')!.metadata });
    s.now = T0 + 20_000;
    const early = s.plan();
    expect(early.actions).toEqual([]);
    expect(early.requeueAfterSeconds).toBe(40);
    s.now = T0 + 60_000;
    expect(kinds(s.plan().actions)).toEqual(['deletePod llm-0-prefill-0-0']);
  });

  it('finishes an interrupted group deletion', () => {
    const s = new Steps(twoRoles('ServingGroupRecreate'));
    s.converge();
    // A previous worker deleted one pod of group 0 and died.
    const p = s.pods.get('llm-0-prefill-0-0')!;
    p.metadata = { ...p.metadata, deletionTimestamp: new Date(T0) };
    expect(kinds(s.plan().actions)).toEqual(['deletePod llm-0-prefill-0-1', 'deletePod llm-0-decode-0-0', 'deleteService llm-0-prefill-0-0']);
  });
});

describe('a plan cut short', () => {
  it('still converges to exactly the right pods when a worker dies in the middle of creating groups', () => {
    const s = new Steps(makeMS({ replicas: 4, template: { roles: [roleSpec('prefill', { workers: 2 }), roleSpec('decode')] } }));
    const first = s.plan();
    s.apply(first, 7); // the worker dies after 7 of its actions
    s.converge();
    const expected = [0, 1, 2, 3].flatMap((o) => [`llm-${o}-decode-0-0`, `llm-${o}-prefill-0-0`, `llm-${o}-prefill-0-1`, `llm-${o}-prefill-0-2`]);
    expect(s.livePodNames()).toEqual(expected.sort());
    expect(s.services.size).toBe(4);
    expect(s.ms.status).toMatchObject({ replicas: 4, availableReplicas: 4 });
  });
});

describe('RoleRollingUpdate', () => {
  const pd = (extra: Record<string, unknown> = {}) =>
    makeMS({
      replicas: 1,
      rolloutStrategy: { type: 'RoleRollingUpdate' },
      template: { roles: [{ ...roleSpec('prefill', { replicas: 4 }), ...extra }, roleSpec('decode', { replicas: 2 })] },
    });
  const prefillImage = (img: string) => (spec: Record<string, unknown>) => {
    const t = (spec as Spec).template.roles[0]!.entryTemplate as { spec: { containers: Array<{ image: string }> } };
    t.spec.containers[0]!.image = img;
  };

  it('changing only prefill leaves decode pods untouched', () => {
    const s = new Steps(pd());
    s.converge();
    const decode = uids(s, 'decode');
    s.setSpec(prefillImage('vllm:v2'));
    s.converge();
    expect(uids(s, 'decode')).toEqual(decode);
    const images = [...s.pods.values()].filter((p) => labelOf(p, LABEL_ROLE) === 'prefill').map((p) => (p.spec?.containers[0] as { image: string }).image);
    expect(images).toEqual(Array(4).fill('vllm:v2'));
    expect(s.ms.status).toMatchObject({ updatedReplicas: 1, currentRevision: s.ms.status?.updateRevision });
  });

  it('respects the role maxUnavailable (default 1): one prefill instance at a time', () => {
    const s = new Steps(pd());
    s.converge();
    s.setSpec(prefillImage('vllm:v2'));
    const first = s.plan();
    expect(kinds(first.actions).filter((k) => !k.startsWith('createControllerRevision'))).toEqual(['deletePod llm-0-prefill-3-0']);
    s.apply(first);
    expect(s.plan().actions.filter((a) => a.kind === 'deletePod')).toEqual([]);
  });

  it('a group with a role being replaced is not available (kthena#1344)', () => {
    const s = new Steps(pd());
    s.converge();
    s.setSpec(prefillImage('vllm:v2'));
    const plan = s.plan();
    expect(plan.status.availableReplicas).toBe(0);
    expect(plan.roleStatus.groups['llm-0']?.state).not.toBe('Running');
  });

  it('a role partition of 2 of 4 keeps indices 0-1 on the old template', () => {
    const s = new Steps(pd({ partition: 2, maxUnavailable: 2 }));
    s.converge();
    s.setSpec(prefillImage('vllm:v2'));
    s.converge();
    const byName = Object.fromEntries(
      [...s.pods.values()].filter((p) => labelOf(p, LABEL_ROLE) === 'prefill').map((p) => [p.metadata?.name, (p.spec?.containers[0] as { image: string }).image]),
    );
    expect(byName).toEqual({
      'llm-0-prefill-0-0': 'vllm:v1',
      'llm-0-prefill-1-0': 'vllm:v1',
      'llm-0-prefill-2-0': 'vllm:v2',
      'llm-0-prefill-3-0': 'vllm:v2',
    });
    // A lost protected instance comes back on the old template.
    s.pods.delete('llm-0-prefill-1-0');
    s.converge();
    expect((s.pods.get('llm-0-prefill-1-0')?.spec?.containers[0] as { image: string }).image).toBe('vllm:v1');
  });

  it('deletes instances of a role removed from the spec', () => {
    const s = new Steps(pd());
    s.converge();
    s.setSpec((spec) => (spec as Spec).template.roles.splice(1, 1));
    const plan = s.plan();
    expect(kinds(plan.actions).filter((k) => k.startsWith('deletePod'))).toEqual(['deletePod llm-0-decode-0-0', 'deletePod llm-0-decode-1-0']);
  });
});

describe("Kthena's open bugs, fixed", () => {
  it('kthena#1795: roles of an outdated group are not resized before the group is replaced', () => {
    const s = new Steps(
      makeMS({ replicas: 3, template: { roles: [roleSpec('p', { replicas: 2, workers: 1 }), roleSpec('d', { replicas: 0, workers: 1 })] } }),
    );
    s.converge();
    s.setSpec((spec) => {
      const [p, d] = (spec as Spec).template.roles;
      p!.replicas = 0;
      d!.replicas = 1;
      d!.workerReplicas = 0;
      delete d!.workerTemplate;
    });
    const plan = s.plan();
    // Only the replacement of llm-2 (highest ordinal): no role created or deleted inside llm-0/llm-1.
    expect(kinds(plan.actions).filter((k) => !k.includes('llm-2') && !k.startsWith('createControllerRevision'))).toEqual([]);
    s.apply(plan);
    s.converge();
    expect(s.livePodNames()).toEqual(['llm-0-d-0-0', 'llm-1-d-0-0', 'llm-2-d-0-0']);
  });

  it('kthena#1712: pods of a deleted ModelServing with the same name are removed, not waited for', () => {
    const s = new Steps(makeMS());
    const old = pod({ group: 'llm-0', role: 'prefill', index: 0, owner: { name: 'llm', uid: 'old-uid' }, uid: 'p-old' });
    s.pods.set('llm-0-prefill-0-0', old);
    const plan = s.plan();
    expect(plan.actions.filter((a) => a.kind === 'deletePod')).toEqual([
      { kind: 'deletePod', name: 'llm-0-prefill-0-0', uid: 'p-old', reason: 'left over from a deleted ModelServing named llm' },
    ]);
    expect(plan.actions.filter((a) => a.kind === 'createPod')).toEqual([]);
    expect(plan.requeueAfterSeconds).toBe(1);
    s.apply(plan);
    s.gone();
    s.converge();
    expect(s.pods.get('llm-0-prefill-0-0')?.metadata?.ownerReferences?.[0]?.uid).toBe('uid-1');
  });

  it('runs lws-standard-labels (Kthena semantics): LWS labels on the pods of a ModelServing a LeaderWorkerSet owns, none otherwise', () => {
    const plugins = [{ name: 'lws-standard-labels', type: 'BuiltIn' }];
    const spec = { replicas: 2, plugins, template: { roles: [roleSpec('prefill', { workers: 2 })] } };
    const owned = makeMS(spec);
    owned.metadata.ownerReferences = [{ apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet', name: 'vllm', uid: 'l1', controller: true }];
    const pods = new Steps(owned).plan().actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod] : []));
    const worker = pods.find((p) => p.metadata?.name === 'llm-1-prefill-0-2');
    expect(worker?.metadata?.labels).toMatchObject({
      'leaderworkerset.sigs.k8s.io/name': 'vllm',
      'leaderworkerset.sigs.k8s.io/group-index': '1',
      'leaderworkerset.sigs.k8s.io/worker-index': '2',
      // sha1("vllm-1"), as LWS computes its group key
      'leaderworkerset.sigs.k8s.io/group-key': 'bd166cfc6625bff9af40e3ceb89d4c756abccaf4',
    });
    expect(pods.find((p) => p.metadata?.name === 'llm-0-prefill-0-0')?.metadata?.labels?.['leaderworkerset.sigs.k8s.io/worker-index']).toBe('0');
    // Scope: entry pods only.
    const entryOnly = makeMS({ ...spec, plugins: [{ ...plugins[0], scope: { target: 'Entry' } }] });
    entryOnly.metadata.ownerReferences = owned.metadata.ownerReferences;
    const scoped = new Steps(entryOnly).plan().actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod] : []));
    expect(scoped.filter((p) => p.metadata?.labels?.['leaderworkerset.sigs.k8s.io/name']).map((p) => p.metadata?.name)).toEqual(['llm-0-prefill-0-0', 'llm-1-prefill-0-0']);
    // Not owned by a LeaderWorkerSet: nothing added, no warning.
    const plain = new Steps(makeMS(spec)).plan();
    expect(plain.actions.flatMap((a) => (a.kind === 'createPod' ? Object.keys(a.pod.metadata?.labels ?? {}) : [])).some((k) => k.startsWith('leaderworkerset'))).toBe(false);
    expect(plain.warnings).toEqual([]);
  });

  it("leaves pods of other owners alone and says so", () => {
    const s = new Steps(makeMS());
    s.pods.set('llm-0-prefill-0-0', pod({ group: 'llm-0', role: 'prefill', index: 0, owner: { name: 'someone-else', uid: 'x' } }));
    const plan = s.plan();
    expect(plan.actions.filter((a) => a.kind === 'deletePod' || a.kind === 'createPod')).toEqual([]);
    expect(plan.warnings[0]).toMatch(/is not one of its pods/);
  });
});

describe('a revision without its ControllerRevision', () => {
  it('leaves an outdated group as it is (Service included) until the rollout replaces it', () => {
    const ms = makeMS({ replicas: 2, template: { roles: [roleSpec('p', { workers: 1 })] } });
    const s = new Steps(ms);
    for (const o of [0, 1]) {
      for (const i of [0, 1]) {
        s.pods.set(`llm-${o}-p-0-${i}`, pod({ group: `llm-${o}`, role: 'p', index: 0, podIndex: i, revision: 'lost', groupSize: 2 }));
      }
      s.services.set(`llm-${o}-p-0-0`, {
        metadata: { name: `llm-${o}-p-0-0`, uid: `svc${o}`, ownerReferences: [{ apiVersion: 'workload.serving.volcano.sh/v1alpha1', kind: 'ModelServing', name: 'llm', uid: 'uid-1', controller: true }] },
      });
    }
    s.pods.delete('llm-0-p-0-1');
    const plan = s.plan();
    expect(plan.warnings.some((w) => w.includes('llm-0 is on revision lost'))).toBe(true);
    // No refill from an unknown template; the rollout replaces the broken group first, the other keeps its Service.
    expect(kinds(plan.actions).filter((k) => !k.startsWith('createControllerRevision'))).toEqual(['deletePod llm-0-p-0-0', 'deleteService llm-0-p-0-0']);
  });
});

describe('taking over from Kthena', () => {
  it('adopts pods whose revision Kthena recorded for the same roles, without rolling them', () => {
    const ms = makeMS({ replicas: 2 });
    const s = new Steps(ms);
    const kthenaRev = '7b5d9c6f8';
    s.revisions.set(`llm-${kthenaRev}`, {
      revision: 1,
      metadata: { name: `llm-${kthenaRev}`, uid: 'cr1', labels: { 'modelserving.volcano.sh/name': 'llm', 'modelserving.volcano.sh/revision': kthenaRev } },
      data: { data: [{ name: 'prefill', replicas: 1, workerReplicas: 0, maxUnavailable: 1, entryTemplate: { spec: { containers: [{ name: 'main', image: 'vllm:v1', resources: {} }] } } }] },
    });
    for (const o of [0, 1]) s.pods.set(`llm-${o}-prefill-0-0`, pod({ group: `llm-${o}`, role: 'prefill', index: 0, revision: kthenaRev, hash: 'kthenahash' }));
    s.ms = { ...s.ms, status: { currentRevision: kthenaRev, updateRevision: kthenaRev } };
    const plan = s.plan();
    expect(kinds(plan.actions)).toEqual([`createControllerRevision llm-${revisionOf(ms.spec.template.roles)}`]);
    expect(plan.status).toMatchObject({ replicas: 2, availableReplicas: 2, updatedReplicas: 2, currentReplicas: 2 });
  });
});

describe('scheduling', () => {
  it('on a cluster with Volcano: pods go to volcano, and each group gets its PodGroup before its pods', () => {
    const plan = new Steps(makeMS()).plan({ cluster: { volcanoPodGroups: true } });
    expect(kinds(plan.actions).slice(1, 3)).toEqual(['createPodGroup llm-0', 'createPod llm-0-prefill-0-0']);
    const created = plan.actions.find((a) => a.kind === 'createPod');
    expect(created?.kind === 'createPod' && created.pod.spec?.schedulerName).toBe('volcano');
  });

  it('on a cluster without Volcano: the default scheduler, no PodGroup', () => {
    const plan = new Steps(makeMS()).plan();
    expect(plan.actions.some((a) => a.kind === 'createPodGroup')).toBe(false);
    const created = plan.actions.find((a) => a.kind === 'createPod');
    expect(created?.kind === 'createPod' && created.pod.spec?.schedulerName).toBeUndefined();
  });

  it('reports pods that no scheduler ever looks at', () => {
    const s = new Steps(makeMS({ schedulerName: 'volcano' }));
    s.apply(s.plan());
    const p = s.pods.get('llm-0-prefill-0-0')!;
    p.status = { phase: 'Pending' };
    s.now = T0 + 30_000;
    expect(s.plan().requeueAfterSeconds).toBe(30);
    s.now = T0 + 61_000;
    const plan = s.plan();
    expect(plan.problems).toHaveLength(1);
    const progressing = plan.status.conditions?.find((c) => c.status === 'True');
    expect(progressing?.message).toMatch(/1 pod\(s\) have waited over 60s without being seen by scheduler "volcano"/);
  });
});

describe('maxSurge (Kthena #1626)', () => {
  /** Ready groups of any ordinal (surge groups included). */
  function readyAnyOrdinal(s: Steps): number {
    const byGroup = new Map<string, V1Pod[]>();
    for (const p of s.pods.values()) byGroup.set(labelOf(p, LABEL_GROUP_NAME), [...(byGroup.get(labelOf(p, LABEL_GROUP_NAME)) ?? []), p]);
    return [...byGroup.values()].filter((ps) =>
      ps.every((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
    ).length;
  }

  function roll(s: Steps, onStep: () => void): void {
    for (let i = 0; i < 40; i++) {
      const plan = s.plan();
      s.apply(plan);
      onStep();
      s.gone();
      onStep();
      s.ready();
      onStep();
      if (plan.actions.length === 0) return;
    }
    throw new Error('did not finish');
  }

  it('maxSurge 1, maxUnavailable 0: never fewer than replicas ready; the surge group is ordinal 3 and is gone at the end', () => {
    const s = new Steps(makeMS({ replicas: 3, rolloutStrategy: { rollingUpdateConfiguration: { maxSurge: 1, maxUnavailable: 0 } } }));
    s.converge();
    s.setSpec(image('vllm:v2'));
    let fewest = Infinity;
    const seen = new Set<string>();
    roll(s, () => {
      fewest = Math.min(fewest, readyAnyOrdinal(s));
      for (const p of s.pods.values()) seen.add(labelOf(p, LABEL_GROUP_NAME));
    });
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(fewest).toBe(3);
    expect([...seen].sort()).toEqual(['llm-0', 'llm-1', 'llm-2', 'llm-3']);
    expect(s.groupRevisions()).toEqual({ 'llm-0': v2, 'llm-1': v2, 'llm-2': v2 });
    expect(s.ms.status).toMatchObject({ replicas: 3, updatedReplicas: 3, availableReplicas: 3, currentRevision: v2 });
  });

  it('with partition 2 of 4 the protected groups keep their pods and the surge group is ordinal 4', () => {
    const s = new Steps(makeMS({ replicas: 4, rolloutStrategy: { rollingUpdateConfiguration: { maxSurge: 1, maxUnavailable: 0, partition: 2 } } }));
    s.converge();
    const v1 = s.ms.status?.updateRevision;
    const protectedUids = [...s.pods.values()].filter((p) => ['llm-0', 'llm-1'].includes(labelOf(p, LABEL_GROUP_NAME))).map((p) => p.metadata?.uid);
    s.setSpec(image('vllm:v2'));
    let fewest = Infinity;
    const seen = new Set<string>();
    roll(s, () => {
      fewest = Math.min(fewest, readyAnyOrdinal(s));
      for (const p of s.pods.values()) seen.add(labelOf(p, LABEL_GROUP_NAME));
    });
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(fewest).toBe(4);
    expect(seen.has('llm-4') && !seen.has('llm-5')).toBe(true);
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v2, 'llm-3': v2 });
    expect([...s.pods.values()].filter((p) => ['llm-0', 'llm-1'].includes(labelOf(p, LABEL_GROUP_NAME))).map((p) => p.metadata?.uid)).toEqual(protectedUids);
  });

  it('RoleRollingUpdate with a role maxSurge 1 and maxUnavailable 0 surges instance index 2', () => {
    const role = { ...roleSpec('prefill', { replicas: 2 }), maxSurge: 1, maxUnavailable: 0 };
    const s = new Steps(makeMS({ replicas: 1, rolloutStrategy: { type: 'RoleRollingUpdate' }, template: { roles: [role] } }));
    s.converge();
    s.setSpec(image('vllm:v2'));
    let fewest = Infinity;
    const seen = new Set<string>();
    roll(s, () => {
      fewest = Math.min(fewest, [...s.pods.values()].filter((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready')).length);
      for (const p of s.pods.values()) seen.add(p.metadata?.name ?? '');
    });
    expect(fewest).toBe(2);
    expect(seen.has('llm-0-prefill-2-0')).toBe(true);
    expect(s.livePodNames()).toEqual(['llm-0-prefill-0-0', 'llm-0-prefill-1-0']);
  });
});

describe('revisionHistoryLimit and collisionCount (Kthena #1643)', () => {
  function rollThrough(s: Steps, images: string[]): string[] {
    const revs = [s.ms.status?.updateRevision ?? ''];
    for (const img of images) {
      s.setSpec(image(img));
      s.converge();
      revs.push(s.ms.status?.updateRevision ?? '');
    }
    return revs;
  }

  it('keeps the newest revisionHistoryLimit unused revisions and prunes older ones', () => {
    const s = new Steps(makeMS({ replicas: 1, revisionHistoryLimit: 2 }));
    s.converge();
    const revs = rollThrough(s, ['vllm:v2', 'vllm:v3', 'vllm:v4']);
    // v4 is in use; v3 and v2 are the 2 newest of history; v1 is pruned.
    expect([...s.revisions.keys()].sort()).toEqual([revs[1], revs[2], revs[3]].map((r) => `llm-${r}`).sort());
    expect([...s.revisions.values()].map((r) => r.revision).sort()).toEqual([2, 3, 4]);
  });

  it('revisionHistoryLimit 0 keeps only the revisions in use; the default keeps 10', () => {
    const none = new Steps(makeMS({ replicas: 1, revisionHistoryLimit: 0 }));
    none.converge();
    const revs = rollThrough(none, ['vllm:v2', 'vllm:v3']);
    expect([...none.revisions.keys()]).toEqual([`llm-${revs[2]}`]);
    expect(makeMS({}).spec.revisionHistoryLimit).toBe(10);
  });

  it('never prunes a revision a pod still uses (a partition-protected group), whatever the limit', () => {
    const s = new Steps(makeMS({ replicas: 2, revisionHistoryLimit: 0, rolloutStrategy: { rollingUpdateConfiguration: { partition: 1 } } }));
    s.converge();
    const revs = rollThrough(s, ['vllm:v2', 'vllm:v3']);
    expect([...s.revisions.keys()].sort()).toEqual([`llm-${revs[0]}`, `llm-${revs[2]}`].sort());
  });

  it('a ControllerRevision of the same name recording other roles is a collision: collisionCount goes up and the revision changes', () => {
    const ms = makeMS({ replicas: 1 });
    const v1 = revisionOf(ms.spec.template.roles);
    const other = makeMS({ template: { roles: [roleSpec('prefill', { image: 'someone-else:v9' })] } });
    const s = new Steps(ms);
    // The name llm-<v1> is taken by a revision of other roles.
    s.revisions.set(`llm-${v1}`, controllerRevisionFor(ms, v1, other.spec.template.roles));
    const plan = s.plan();
    expect(plan.status.collisionCount).toBe(1);
    expect(plan.updateRevision).not.toBe(v1);
    expect(plan.updateRevision).toBe(revisionOf(ms.spec.template.roles, 1));
    s.apply(plan);
    s.converge();
    expect(s.ms.status).toMatchObject({ collisionCount: 1, updateRevision: revisionOf(ms.spec.template.roles, 1) });
    expect(Object.values(s.groupRevisions())).toEqual([revisionOf(ms.spec.template.roles, 1)]);
  });

  it('no collision: no collisionCount in status', () => {
    const s = new Steps(makeMS({ replicas: 1 }));
    s.converge();
    expect(s.ms.status?.collisionCount).toBeUndefined();
  });
});

describe('a return to an older template (rollback)', () => {
  it('renumbers the old revision the newest instead of recording it again, and rolls the pods back to it', () => {
    const s = new Steps(makeMS({ replicas: 1 }));
    s.converge();
    const a = s.ms.status?.updateRevision ?? '';
    s.setSpec(image('vllm:v2'));
    s.converge();
    s.setSpec(image('vllm:v1'));
    const plan = s.plan();
    expect(plan.updateRevision).toBe(a);
    expect(kinds(plan.actions)).toContain(`renumberControllerRevision llm-${a}`);
    expect(kinds(plan.actions).some((k) => k.startsWith('createControllerRevision'))).toBe(false);
    s.apply(plan);
    s.converge();
    expect(s.revisions.get(`llm-${a}`)?.revision).toBe(3);
    expect(Object.values(s.groupRevisions())).toEqual([a]);
  });
});
