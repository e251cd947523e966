import { describe, expect, it } from 'vitest';
import type { Role } from '../../../api/modelserving.js';
import { desiredPod, desiredRolePods } from './pod.js';
import { roleTemplateHash } from './revision.js';
import { makeMS } from './test-fixtures.js';

describe('desired pods', () => {
  const ms = makeMS({
    template: {
      roles: [
        {
          name: 'prefill',
          workerReplicas: 2,
          entryTemplate: {
            metadata: { labels: { app: 'llm', 'modelserving.volcano.sh/role': 'hijack' }, annotations: { note: 'x' } },
            spec: {
              initContainers: [{ name: 'init', image: 'busybox' }],
              containers: [{ name: 'main', image: 'vllm:v1', env: [{ name: 'GROUP_SIZE', value: 'stale' }, { name: 'KEEP', value: '1' }] }],
            },
          },
          workerTemplate: { spec: { containers: [{ name: 'worker', image: 'vllm:v1' }] } },
        },
      ],
    },
  });
  const role = ms.spec.template.roles[0] as Role;
  const ctx = { ms, groupName: 'llm-3', role, roleIndex: 1, revision: 'rev1', schedulerName: undefined, gang: false };

  it('builds the entry pod and the workers of a role instance with Kthena names', () => {
    expect(desiredRolePods(ctx).map((p) => p.metadata?.name)).toEqual(['llm-3-prefill-1-0', 'llm-3-prefill-1-1', 'llm-3-prefill-1-2']);
  });

  it("labels the pod with Kthena's keys; the template cannot override them", () => {
    const entry = desiredPod(ctx, 0);
    expect(entry.metadata?.labels).toEqual({
      app: 'llm',
      'modelserving.volcano.sh/name': 'llm',
      'modelserving.volcano.sh/group-name': 'llm-3',
      'modelserving.volcano.sh/role': 'prefill',
      'modelserving.volcano.sh/role-id': 'prefill-1',
      'modelserving.volcano.sh/revision': 'rev1',
      'modelserving.volcano.sh/role-template-hash': roleTemplateHash(role),
      'modelserving.volcano.sh/entry': 'true',
    });
    expect(entry.metadata?.annotations).toEqual({ note: 'x' });
    expect(desiredPod(ctx, 1).metadata?.labels?.['modelserving.volcano.sh/entry']).toBeUndefined();
  });

  it('is controlled by the ModelServing', () => {
    expect(desiredPod(ctx, 0).metadata?.ownerReferences).toEqual([
      { apiVersion: 'workload.serving.volcano.sh/v1alpha1', kind: 'ModelServing', name: 'llm', uid: 'uid-1', controller: true, blockOwnerDeletion: true },
    ]);
  });

  it('injects GROUP_SIZE, ENTRY_ADDRESS and WORKER_INDEX into every container, replacing same-named vars', () => {
    const entry = desiredPod(ctx, 0);
    const env = (c: unknown) => (c as { env: Array<{ name: string; value: string }> }).env;
    expect(env(entry.spec?.containers[0])).toEqual([
      { name: 'KEEP', value: '1' },
      { name: 'GROUP_SIZE', value: '3' },
      { name: 'ENTRY_ADDRESS', value: 'llm-3-prefill-1-0.ns' },
      { name: 'WORKER_INDEX', value: '0' },
    ]);
    expect(env(entry.spec?.initContainers?.[0])).toHaveLength(3);
    const worker = desiredPod(ctx, 2);
    expect(env(worker.spec?.containers[0])).toContainEqual({ name: 'WORKER_INDEX', value: '2' });
    expect(worker.spec?.containers[0]?.name).toBe('worker');
    // The template itself is not modified.
    expect(env(role.entryTemplate.spec.containers[0])).toHaveLength(2);
  });

  it('sets the scheduler and Volcano annotations when asked', () => {
    const pod = desiredPod({ ...ctx, schedulerName: 'volcano', gang: true }, 1);
    expect(pod.spec?.schedulerName).toBe('volcano');
    expect(pod.metadata?.annotations).toEqual({ 'scheduling.k8s.io/group-name': 'llm-3', 'volcano.sh/task-spec': 'prefill-1' });
    expect(desiredPod(ctx, 1).spec?.schedulerName).toBeUndefined();
  });
});
