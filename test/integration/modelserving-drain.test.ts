// Eviction protection on the sandbox (kthena #1481): `kubectl drain` (the Eviction API) of a node that runs
// every pod of a ModelServing with `ripple.dev/eviction-protection: "true"` never takes it below
// `replicas - maxUnavailable` available ServingGroups. Every pod event is observed through a watch started
// from a list's resourceVersion. The test brings two KWOK nodes of its own, tainted so that only its pods
// go there, and removes them at the end: the sandbox's shared nodes are never cordoned.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { IMAGE_A, availableGroupNames, createMs, kubectlPath, listPods, modelServingFunctions, trackPods, waitConverged } from '../fixtures/modelserving-fixtures.js';
import { kubeRequest } from '../../kube/raw.js';
import { collectionPath } from '../../kube/resources.js';
import { PDB_RESOURCE } from '../../functions/reconcile-modelserving/plan/disruption.js';

const run = promisify(execFile);
const TAINT = 'ripple.dev/drain-test';

describe('ModelServing eviction protection', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  let nodes: [string, string];
  const kubectl = (...args: string[]) => run(kubectlPath(), ['--kubeconfig', inject('kubeconfig'), ...args], { timeout: 180_000 });

  beforeAll(async () => {
    sb = await openSandbox('ms-drain');
    nodes = [`${sb.namespace}-a`, `${sb.namespace}-b`];
    for (const [i, name] of nodes.entries()) {
      await sb.core.createNode({
        body: {
          metadata: { name, annotations: { 'kwok.x-k8s.io/node': 'fake' }, labels: { 'kubernetes.io/hostname': name, type: 'kwok', [TAINT]: sb.namespace } },
          // Node b starts cordoned, so every pod lands on node a.
          spec: { taints: [{ key: TAINT, value: sb.namespace, effect: 'NoSchedule' }], unschedulable: i === 1 },
          status: { allocatable: { cpu: '64', memory: '512Gi', pods: '250' }, capacity: { cpu: '64', memory: '512Gi', pods: '250' } },
        },
      });
    }
    await waitFor('test nodes Ready', 60_000, async () => {
      const ready = await Promise.all(nodes.map(async (n) => (await sb.core.readNode({ name: n })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')));
      return ready.every(Boolean);
    });
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    for (const n of nodes ?? []) await sb?.core.deleteNode({ name: n }).catch(() => undefined);
    await sb?.cleanup();
  });

  it('kubectl drain of the node that runs every pod keeps 2 of 3 ServingGroups available at every pod event, and completes', async () => {
    const pod = {
      spec: {
        containers: [{ name: 'main', image: IMAGE_A, resources: { requests: { cpu: '10m' } } }],
        nodeSelector: { [TAINT]: sb.namespace },
        tolerations: [{ key: TAINT, operator: 'Equal', value: sb.namespace, effect: 'NoSchedule' }],
      },
    };
    await createMs(sb, {
      apiVersion: 'workload.serving.volcano.sh/v1alpha1',
      kind: 'ModelServing',
      metadata: { name: 'dr', namespace: sb.namespace, annotations: { 'ripple.dev/eviction-protection': 'true' } },
      spec: {
        replicas: 3,
        rolloutStrategy: { rollingUpdateConfiguration: { maxUnavailable: 1 } },
        template: { roles: [{ name: 'main', replicas: 1, workerReplicas: 1, entryTemplate: pod, workerTemplate: pod }] },
      },
    });
    const before = await waitConverged(sb, 'dr', { podsPerGroup: 2 });
    expect(new Set(before.pods.map((p) => p.spec?.nodeName))).toEqual(new Set([nodes[0]]));
    // One PDB per ServingGroup, exactly one of them open.
    const pdbs = await waitFor('a PodDisruptionBudget per ServingGroup', 30_000, async () => {
      const list = (await kubeRequest(sb.kc, collectionPath(PDB_RESOURCE, sb.namespace), { query: { labelSelector: 'modelserving.volcano.sh/name=dr' } })) as {
        items: Array<{ metadata: { name: string }; spec: { maxUnavailable: number | string } }>;
      };
      return list.items.length === 3 ? list.items : false;
    });
    expect(pdbs.map((p) => p.metadata.name).sort()).toEqual(['dr-0', 'dr-1', 'dr-2']);
    expect(pdbs.map((p) => p.spec.maxUnavailable).sort()).toEqual([0, 0, '100%']);
    await kubectl('uncordon', nodes[1]);

    let fewest = Number.POSITIVE_INFINITY;
    let events = 0;
    const tracker = await trackPods(sb, 'dr', (pods) => {
      events++;
      fewest = Math.min(fewest, availableGroupNames(2, pods).length);
    });
    const drained = await kubectl('drain', nodes[0], '--pod-selector=modelserving.volcano.sh/name=dr', '--ignore-daemonsets', '--timeout=150s');
    const after = await waitConverged(sb, 'dr', { podsPerGroup: 2, extra: (_m, ps) => ps.every((p) => p.spec?.nodeName === nodes[1]) });
    tracker.stop();

    expect(drained.stdout).toContain('drained');
    expect(events).toBeGreaterThan(12); // 6 pods evicted and 6 created, each through several events: all were judged
    expect(fewest).toBe(2);
    expect(after.pods.every((p) => p.spec?.nodeName === nodes[1])).toBe(true);
    expect((await listPods(sb, 'dr')).filter((p) => p.spec?.nodeName === nodes[0])).toEqual([]);
  }, 240_000);
});
