// Issue 13: the planner on a slow, messy cluster — pods that take their time to terminate, groups
// lost in the middle of a scale-down. `Steps` deletes instantly unless a test holds a pod, so each
// test here holds pods in their terminating state (deletionTimestamp set, still listed) on purpose.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { describeAction, type Action } from './actions.js';
import { LABEL_GROUP_NAME, LABEL_REVISION } from './names.js';
import { controllerRevisionFor, revisionOf } from './revision.js';
import { Steps, T0, makeMS, pod, roleSpec } from './test-fixtures.js';

const kinds = (actions: Action[]) => actions.map(describeAction);
const labelOf = (p: V1Pod, key: string) => p.metadata?.labels?.[key] ?? '';
const imageOf = (p: V1Pod | undefined) => (p?.spec?.containers[0] as { image?: string } | undefined)?.image;

function setImage(img: string) {
  return (spec: Record<string, unknown>) => {
    const roles = (spec as { template: { roles: Array<{ entryTemplate: { spec: { containers: Array<{ image: string }> } } }> } }).template.roles;
    for (const r of roles) r.entryTemplate.spec.containers[0]!.image = img;
  };
}

/** Partition 1 of 2: group 0 on v1 (protected), group 1 rolled to v2. */
function protectedGroupOnOldRevision(recoveryPolicy?: string) {
  const s = new Steps(
    makeMS({ replicas: 2, ...(recoveryPolicy ? { recoveryPolicy } : {}), rolloutStrategy: { rollingUpdateConfiguration: { partition: 1 } } }),
  );
  s.converge();
  const v1 = revisionOf(s.ms.spec.template.roles);
  s.setSpec(setImage('vllm:v2'));
  s.converge();
  const v2 = revisionOf(s.ms.spec.template.roles);
  expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v2 });
  expect(s.ms.status).toMatchObject({ currentRevision: v1, updateRevision: v2 });
  return { s, v1, v2 };
}

function hold(s: Steps, name: string): void {
  const p = s.pods.get(name)!;
  p.metadata = { ...p.metadata, deletionTimestamp: new Date(s.now) };
}

describe('issue 13 scenario 1: a partition-protected group terminating slowly', () => {
  it('keeps currentRevision (and its ControllerRevision) while the protected group terminates, then rebuilds it on it', () => {
    const { s, v1, v2 } = protectedGroupOnOldRevision();
    hold(s, 'llm-0-prefill-0-0');
    // Several reconciles while the pod takes its time to go.
    for (let i = 0; i < 3; i++) {
      s.now += 5_000;
      const plan = s.plan();
      expect(plan.status.currentRevision).toBe(v1);
      expect(kinds(plan.actions).filter((k) => k.startsWith('deleteControllerRevision'))).toEqual([]);
      s.apply(plan);
    }
    expect(s.revisions.has(`llm-${v1}`)).toBe(true);
    s.gone();
    const refill = s.plan();
    const created = refill.actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod] : []));
    expect(created.map((p) => [p.metadata?.name, labelOf(p, LABEL_REVISION), imageOf(p)])).toEqual([['llm-0-prefill-0-0', v1, 'vllm:v1']]);
    s.apply(refill);
    s.converge();
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v2 });
    expect(s.ms.status).toMatchObject({ currentRevision: v1, updateRevision: v2, currentReplicas: 1, updatedReplicas: 1 });
  });

  it('ServingGroupRecreate: a failed pod of the protected group is rebuilt on currentRevision', () => {
    const { s, v1, v2 } = protectedGroupOnOldRevision('ServingGroupRecreate');
    s.pods.get('llm-0-prefill-0-0')!.status = { phase: 'Failed', conditions: [{ type: 'Ready', status: 'False' }] };
    const recreate = s.plan();
    expect(kinds(recreate.actions)).toEqual(['deletePod llm-0-prefill-0-0']);
    expect(recreate.status.currentRevision).toBe(v1);
    s.apply(recreate);
    s.now += 30_000;
    expect(s.plan().status.currentRevision).toBe(v1);
    s.gone();
    s.converge();
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v2 });
    expect(imageOf(s.pods.get('llm-0-prefill-0-0'))).toBe('vllm:v1');
  });

  it('without a partition the update revision becomes current once the last old group is gone', () => {
    const s = new Steps(makeMS({ replicas: 2 }));
    s.converge();
    const v1 = revisionOf(s.ms.spec.template.roles);
    s.setSpec(setImage('vllm:v2'));
    s.converge();
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(s.ms.status).toMatchObject({ currentRevision: v2, updateRevision: v2 });
    // Kept as history for rollback (revisionHistoryLimit, default 10), not because a group needs it.
    expect(s.revisions.has(`llm-${v1}`)).toBe(true);
  });
});

describe('issue 13 scenario 2: protected ordinals during a scale-down', () => {
  it('groups {0,1,3,4}, replicas 4, partition 3: recreates ordinal 2 on currentRevision and removes ordinal 4', () => {
    const ms = makeMS({ replicas: 4, rolloutStrategy: { rollingUpdateConfiguration: { partition: 3 } } });
    const v1 = revisionOf(ms.spec.template.roles);
    const s = new Steps(ms);
    s.revisions.set(`llm-${v1}`, controllerRevisionFor(ms, v1, ms.spec.template.roles));
    for (const o of [0, 1, 3, 4]) s.pods.set(`llm-${o}-prefill-0-0`, pod({ group: `llm-${o}`, role: 'prefill', index: 0, revision: v1 }));
    s.ms = { ...s.ms, status: { currentRevision: v1, updateRevision: v1 } };
    s.setSpec(setImage('vllm:v2'));
    const plan = s.plan();
    expect(kinds(plan.actions).filter((k) => k.startsWith('deletePod'))).toContain('deletePod llm-4-prefill-0-0');
    const created = plan.actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod] : []));
    expect(created.map((p) => [p.metadata?.name, labelOf(p, LABEL_REVISION)])).toContainEqual(['llm-2-prefill-0-0', v1]);
    s.apply(plan);
    s.converge();
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(s.groupRevisions()).toEqual({ 'llm-0': v1, 'llm-1': v1, 'llm-2': v1, 'llm-3': v2 });
  });

  it('scaling 5 -> 4 with protected group 2 lost at the same time keeps 0..2 and one other', () => {
    const ms = makeMS({ replicas: 4, rolloutStrategy: { rollingUpdateConfiguration: { partition: 3 } } });
    const v1 = revisionOf(ms.spec.template.roles);
    const s = new Steps(ms);
    s.revisions.set(`llm-${v1}`, controllerRevisionFor(ms, v1, ms.spec.template.roles));
    for (const o of [0, 1, 3, 4, 5]) s.pods.set(`llm-${o}-prefill-0-0`, pod({ group: `llm-${o}`, role: 'prefill', index: 0, revision: v1, createdAt: T0 }));
    s.ms = { ...s.ms, status: { currentRevision: v1, updateRevision: v1 } };
    s.converge();
    expect(Object.keys(s.groupRevisions())).toEqual(['llm-0', 'llm-1', 'llm-2', 'llm-3']);
    expect(labelOf(s.pods.get('llm-2-prefill-0-0')!, LABEL_GROUP_NAME)).toBe('llm-2');
  });
});

describe('issue 13 scenario 3: generated names and an HPA changing replicas', () => {
  const name49 = 'a'.repeat(49);
  const spec = (replicas: number) => ({ replicas, template: { roles: [roleSpec('prefill', { workers: 1 })] } });

  it('a 49-character name scaled 9 -> 10 stays valid and converges (Service names of ordinal 9 are 63 characters)', () => {
    const s = new Steps(makeMS(spec(9), name49));
    s.converge();
    s.setSpec((sp) => (sp.replicas = 10));
    s.converge();
    expect(Object.keys(s.groupRevisions())).toHaveLength(10);
    expect([...s.services.keys()]).toContain(`${name49}-9-prefill-0-0`);
    expect(s.last?.blocked).toEqual([]);
    expect(s.ms.status?.conditions?.find((c) => c.status === 'True')?.type).toBe('Available');
  });

  it('scaled to 11, ordinal 10 is refused on status (not terminal), the other 10 keep serving, and scaling back recovers', () => {
    const s = new Steps(makeMS(spec(10), name49));
    s.converge();
    s.setSpec((sp) => (sp.replicas = 11));
    const plan = s.plan();
    expect(plan.actions).toEqual([]);
    expect(plan.blocked.map((b) => b.message)).toEqual([
      `spec.replicas: ServingGroups from ordinal 10 are not created because "${name49}-10-prefill-0-0" would be 64 characters, over the 63 Kubernetes allows for Service names and label values; keep spec.replicas at most 10 or shorten metadata.name`,
    ]);
    expect(plan.status.conditions?.find((c) => c.status === 'True')?.type).toBe('Progressing');
    expect(plan.status.availableReplicas).toBe(10);
    s.apply(plan);
    s.setSpec((sp) => (sp.replicas = 10));
    s.converge();
    expect(s.ms.status?.conditions?.find((c) => c.status === 'True')?.type).toBe('Available');
  });
});

describe('issue 13 scenario 9: ControllerRevision numbers', () => {
  it('numbers each new revision one above the highest recorded, as a StatefulSet does', () => {
    const s = new Steps(makeMS({ replicas: 1, rolloutStrategy: { rollingUpdateConfiguration: { partition: 1 } } }));
    s.converge();
    const v1 = revisionOf(s.ms.spec.template.roles);
    s.setSpec(setImage('vllm:v2'));
    s.converge();
    const v2 = revisionOf(s.ms.spec.template.roles);
    expect(s.revisions.get(`llm-${v1}`)?.revision).toBe(1);
    expect(s.revisions.get(`llm-${v2}`)?.revision).toBe(2);
  });
});

describe('issue 13 scenario 8: stacked role updates', () => {
  const image = (p: V1Pod | undefined) => imageOf(p);
  it('A -> B -> C with role partition 2 rebuilds a lost protected instance from A, not B', () => {
    const s = new Steps(
      makeMS({
        replicas: 1,
        rolloutStrategy: { type: 'RoleRollingUpdate' },
        template: { roles: [{ ...roleSpec('prefill', { replicas: 4 }), partition: 2, maxUnavailable: 2 }, roleSpec('decode')] },
      }),
    );
    s.converge();
    const a = revisionOf(s.ms.spec.template.roles);
    s.setSpec(setImage('vllm:v2'));
    s.converge();
    expect(s.ms.status?.currentRevision).toBe(a);
    // Revision C: the unprotected instances roll on; meanwhile protected instance 0 is lost.
    s.setSpec(setImage('vllm:v3'));
    s.pods.delete('llm-0-prefill-0-0');
    const plan = s.plan();
    const refill = plan.actions.flatMap((x) => (x.kind === 'createPod' && x.pod.metadata?.name === 'llm-0-prefill-0-0' ? [x.pod] : []));
    expect(refill.map((p) => [labelOf(p, LABEL_REVISION), image(p)])).toEqual([[a, 'vllm:v1']]);
    expect(plan.status.currentRevision).toBe(a);
  });
});

describe('issue 13 scenario 7: the restart rule remembers each pod', () => {
  const status = (ready: boolean, restarts: number) => ({
    phase: 'Running',
    conditions: [
      { type: 'PodScheduled', status: 'True' },
      { type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date(T0) },
    ],
    containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready, restartCount: restarts }],
  });

  it('a pod that restarted once long ago and recovered is not recreated on a later readiness blip; a new restart is', () => {
    const s = new Steps(makeMS({ replicas: 1 }));
    s.converge();
    const p = s.pods.get('llm-0-prefill-0-0')!;
    // It restarted once, long ago, and has been Running and Ready since.
    p.status = status(true, 1);
    s.apply(s.plan());
    s.now += 3_600_000;
    // A readiness probe blip: not ready, no new restart.
    p.status = status(false, 1);
    const blip = s.plan();
    expect(kinds(blip.actions)).toEqual([]);
    s.apply(blip);
    // A new crash: the restart count moves on, and the role is recreated (grace 0).
    p.status = status(false, 2);
    expect(kinds(s.plan().actions)).toEqual(['deletePod llm-0-prefill-0-0']);
  });

  it('forgets pods that are gone, so the datastore does not grow', () => {
    const s = new Steps(makeMS({ replicas: 1 }));
    s.converge();
    s.pods.get('llm-0-prefill-0-0')!.status = status(true, 3);
    s.apply(s.plan());
    expect(s.roleStatus?.roles['llm-0/prefill-0']?.restarts).toEqual({ [s.pods.get('llm-0-prefill-0-0')!.metadata!.uid!]: 3 });
    s.pods.delete('llm-0-prefill-0-0');
    s.converge();
    expect(s.roleStatus?.roles['llm-0/prefill-0']?.restarts).toBeUndefined();
  });
});

describe('issue 13 scenario 6: a pod of another owner holds a needed name', () => {
  it('is reported on status and looked at again slowly, not every second', () => {
    const s = new Steps(makeMS({ replicas: 1 }));
    const foreign = pod({ group: 'llm-0', role: 'prefill', index: 0, owner: { name: 'someone-else', uid: 'uid-x' } });
    foreign.metadata!.labels!['modelserving.volcano.sh/name'] = 'llm';
    s.pods.set('llm-0-prefill-0-0', foreign);
    const plan = s.plan();
    expect(kinds(plan.actions).filter((k) => k.startsWith('createPod'))).toEqual([]);
    expect(plan.blocked).toEqual([
      {
        reason: 'NameTaken',
        message:
          'pod llm-0-prefill-0-0 exists and is not owned by this ModelServing, so ServingGroup llm-0 cannot be completed; delete or rename that pod',
      },
    ]);
    expect(plan.requeueAfterSeconds).toBe(30);
    expect(plan.status.conditions?.find((c) => c.status === 'True')?.type).not.toBe('Available');
    // Once it is gone, the group is created.
    s.pods.delete('llm-0-prefill-0-0');
    s.converge();
    expect(s.livePodNames()).toEqual(['llm-0-prefill-0-0']);
  });
});
