import { describe, expect, it } from 'vitest';
import { desiredPodGroup, effectiveSchedulerName, gangEnabled, podGroupSpecDiffers } from './gang.js';
import { makeMS } from './test-fixtures.js';

const volcano = { volcanoPodGroups: true };
const plain = { volcanoPodGroups: false };

describe('scheduler choice', () => {
  it('uses volcano (with gang scheduling) only when Volcano is installed and nothing else is asked', () => {
    const ms = makeMS();
    expect(effectiveSchedulerName(ms, volcano)).toBe('volcano');
    expect(gangEnabled(ms, volcano)).toBe(true);
    expect(effectiveSchedulerName(ms, plain)).toBeUndefined();
    expect(gangEnabled(ms, plain)).toBe(false);
  });

  it('always honours an explicit schedulerName', () => {
    expect(effectiveSchedulerName(makeMS({ schedulerName: 'volcano' }), plain)).toBe('volcano');
    expect(gangEnabled(makeMS({ schedulerName: 'volcano' }), plain)).toBe(false);
    expect(gangEnabled(makeMS({ schedulerName: 'default-scheduler' }), volcano)).toBe(false);
  });
});

describe('PodGroup', () => {
  const ms = makeMS({
    template: {
      gangPolicy: { minRoleReplicas: { prefill: 1 } },
      networkTopology: { groupPolicy: { mode: 'hard', highestTierAllowed: 1 } },
      roles: [
        {
          name: 'prefill',
          replicas: 2,
          workerReplicas: 2,
          entryTemplate: { spec: { containers: [{ name: 'm', image: 'i', resources: { requests: { cpu: '500m', 'nvidia.com/gpu': 1 } } }] } },
          workerTemplate: { spec: { containers: [{ name: 'w', image: 'i', resources: { requests: { cpu: 1, memory: '1Gi' } } }] } },
        },
        { name: 'decode', replicas: 2, workerReplicas: 0, entryTemplate: { spec: { containers: [{ name: 'm', image: 'i', resources: { requests: { cpu: '2' } } }] } } },
      ],
    },
  });
  const roles = ms.spec.template.roles;

  it('asks for the minimum instances of each role, with their summed requests', () => {
    const pg = desiredPodGroup(ms, 'llm-0', roles, volcano);
    // prefill: min 1 instance x (1 entry + 2 workers); decode: 2 instances x 1 pod.
    expect(pg.spec.minMember).toBe(5);
    expect(pg.spec.minResources).toEqual({ cpu: '6500m', memory: '2147483648', 'nvidia.com/gpu': '1' });
    expect(pg.spec.networkTopology).toEqual({ mode: 'hard', highestTierAllowed: 1 });
    expect(pg.metadata).toMatchObject({ name: 'llm-0', labels: { 'modelserving.volcano.sh/group-name': 'llm-0' }, annotations: { 'scheduling.k8s.io/group-name': 'llm-0' } });
    expect(pg.spec.subGroupPolicy).toBeUndefined();
  });

  it('adds a per-role sub-group policy when the PodGroup CRD supports it', () => {
    const pg = desiredPodGroup(ms, 'llm-0', roles, { volcanoPodGroups: true, volcanoSubGroupPolicy: true });
    expect(pg.spec.subGroupPolicy?.map((p) => [p.name, p.subGroupSize, p.minSubGroups])).toEqual([
      ['prefill', 3, 1],
      ['decode', 1, 2],
    ]);
  });

  it('takes the queue from the ModelServing annotation', () => {
    const queued = { ...ms, metadata: { ...ms.metadata, annotations: { 'scheduling.volcano.sh/queue-name': 'q1' } } };
    expect(desiredPodGroup(queued, 'llm-0', roles, volcano).spec.queue).toBe('q1');
  });

  it('compares specs by value, quantities canonically', () => {
    const desired = desiredPodGroup(ms, 'llm-0', roles, volcano).spec;
    expect(podGroupSpecDiffers({ ...desired, minResources: { cpu: '6.5', memory: '2Gi', 'nvidia.com/gpu': '1' } }, desired)).toBe(false);
    expect(podGroupSpecDiffers({ ...desired, minMember: 4 }, desired)).toBe(true);
    expect(podGroupSpecDiffers(undefined, desired)).toBe(true);
  });
});
