import { describe, expect, it } from 'vitest';
import { parseLeaderWorkerSet, type LeaderWorkerSet } from '../../../api/leaderworkerset.js';
import { parseModelServing, type ModelServingStatus } from '../../../api/modelserving.js';
import { lwsOwnerOf, lwsStatusFrom, LWS_SPEC_HASH_ANNOTATION, shadowModelServing } from './shadow.js';

function lws(spec: Record<string, unknown>, extra: Record<string, unknown> = {}): LeaderWorkerSet {
  const parsed = parseLeaderWorkerSet({
    apiVersion: 'leaderworkerset.x-k8s.io/v1',
    kind: 'LeaderWorkerSet',
    metadata: { name: 'llm', namespace: 'serving', uid: 'u-1', generation: 4 },
    spec,
    ...extra,
  });
  if (!parsed) throw new Error('test LeaderWorkerSet does not parse');
  return parsed;
}
const worker = { spec: { containers: [{ name: 'w', image: 'vllm:1' }] } };
const leader = { metadata: { labels: { role: 'leader' }, name: 'ignored' }, spec: { containers: [{ name: 'l', image: 'vllm:1' }] } };

describe('shadowModelServing (Kthena lws_controller constructModelServing)', () => {
  it('one role "default": the leader template as entry, size - 1 workers, LWS labels plugin, owned by the LeaderWorkerSet', () => {
    const { body, hash } = shadowModelServing(lws({ replicas: 3, leaderWorkerTemplate: { size: 4, leaderTemplate: leader, workerTemplate: worker } }));
    const parsed = parseModelServing(body);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const ms = parsed.value;
    expect(ms.metadata).toMatchObject({ name: 'llm', namespace: 'serving', annotations: { [LWS_SPEC_HASH_ANNOTATION]: hash } });
    const owner = { apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet', name: 'llm', uid: 'u-1', controller: true, blockOwnerDeletion: true };
    expect(ms.metadata.ownerReferences).toEqual([owner]);
    expect(lwsOwnerOf({ ownerReferences: [owner] })).toEqual({ name: 'llm', uid: 'u-1' });
    expect(lwsOwnerOf({ ownerReferences: [{ ...owner, controller: false }] })).toBeUndefined();
    expect(lwsOwnerOf({ ownerReferences: [{ ...owner, apiVersion: 'example.com/v1' }] })).toBeUndefined();
    expect(ms.spec.replicas).toBe(3);
    expect(ms.spec.plugins).toEqual([{ name: 'lws-standard-labels', type: 'BuiltIn' }]);
    expect(ms.spec.template.roles).toHaveLength(1);
    const role = ms.spec.template.roles[0];
    expect(role).toMatchObject({ name: 'default', replicas: 1, workerReplicas: 3 });
    // Only labels and annotations of the template's metadata go over (Kthena's Metadata has nothing else).
    expect(role?.entryTemplate).toEqual({ metadata: { labels: { role: 'leader' } }, spec: leader.spec });
    expect(role?.workerTemplate).toEqual({ spec: worker.spec });
  });

  it('without a leader template the leader runs the worker template; size 1 has no workers', () => {
    const { body } = shadowModelServing(lws({ leaderWorkerTemplate: { workerTemplate: worker } }));
    const spec = body.spec as { replicas: number; template: { roles: Array<Record<string, unknown>> } };
    expect(spec.replicas).toBe(1);
    expect(spec.template.roles[0]).toMatchObject({ workerReplicas: 0, entryTemplate: { spec: worker.spec }, workerTemplate: { spec: worker.spec } });
  });

  it("carries the rolling update settings and restartPolicy None; the hash moves with the spec only", () => {
    const base = { replicas: 2, leaderWorkerTemplate: { size: 2, workerTemplate: worker, restartPolicy: 'None' } };
    const a = shadowModelServing(lws({ ...base, rolloutStrategy: { type: 'RollingUpdate', rollingUpdateConfiguration: { partition: 1, maxSurge: 1, maxUnavailable: 0 } } }));
    expect(a.body.spec).toMatchObject({
      recoveryPolicy: 'None',
      rolloutStrategy: { type: 'ServingGroupRollingUpdate', rollingUpdateConfiguration: { partition: 1, maxSurge: 1, maxUnavailable: 0 } },
    });
    expect(parseModelServing(a.body).ok).toBe(true);
    expect(shadowModelServing(lws(base)).hash).toBe(shadowModelServing(lws(base, { status: { replicas: 9 } })).hash);
    expect(shadowModelServing(lws({ ...base, replicas: 3 })).hash).not.toBe(shadowModelServing(lws(base)).hash);
  });
});

describe('lwsStatusFrom (Kthena updateLWSStatus)', () => {
  const ms: ModelServingStatus = {
    replicas: 3,
    availableReplicas: 2,
    updatedReplicas: 3,
    labelSelector: 'modelserving.volcano.sh/entry=true,modelserving.volcano.sh/name=llm',
    conditions: [
      { type: 'Progressing', status: 'True', reason: 'GroupProgressing', message: 'Some groups is progressing: [2]', lastTransitionTime: '2026-11-28T10:00:00Z', observedGeneration: 1 },
      { type: 'Ready', status: 'False', reason: 'GroupProgressing', message: 'x', lastTransitionTime: '2026-11-28T10:00:00Z' },
    ],
  };

  it("says the ModelServing's groups as the LeaderWorkerSet's: ready = available, its selector, LWS's condition types only", () => {
    expect(lwsStatusFrom(lws({ leaderWorkerTemplate: { workerTemplate: worker } }), ms)).toEqual({
      replicas: 3,
      readyReplicas: 2,
      updatedReplicas: 3,
      hpaPodSelector: ms.labelSelector,
      observedGeneration: 4,
      conditions: [{ type: 'Progressing', status: 'True', reason: 'GroupProgressing', message: 'Some groups is progressing: [2]', lastTransitionTime: '2026-11-28T10:00:00Z', observedGeneration: 4 }],
    });
  });

  it('is undefined when the LeaderWorkerSet already says it', () => {
    const first = lwsStatusFrom(lws({ leaderWorkerTemplate: { workerTemplate: worker } }), ms);
    expect(lwsStatusFrom(lws({ leaderWorkerTemplate: { workerTemplate: worker } }, { status: first }), ms)).toBeUndefined();
  });
});
