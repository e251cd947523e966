// maxSurge on the sandbox (Kthena PR #1626): a Kthena manifest with `maxSurge: 1, maxUnavailable: 0`
// rolls out with zero unavailable ServingGroups, the surge group taking the next ordinal above the
// replicas; with a partition the protected ordinals are never touched and a lost protected group is
// still rebuilt on CurrentRevision (seed 004); RoleRollingUpdate surges role instances the same way.
// Every pod event is observed through a watch started from a list's resourceVersion, not sampled.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  IMAGE_A,
  IMAGE_B,
  availableGroupNames,
  createMs,
  groupOf,
  imageOf,
  isReady,
  label,
  listPods,
  modelServingFunctions,
  mustGetMs,
  patchMs,
  revisionOf,
  roleManifest,
  trackPods,
  waitConverged,
  type RoleOptions,
} from '../fixtures/modelserving-fixtures.js';

const uidsOf = (pods: readonly V1Pod[], test: (p: V1Pod) => boolean) =>
  Object.fromEntries(pods.filter(test).map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));

/** A manifest as a Kthena user writes it today (PR #1626): maxSurge beside maxUnavailable 0. */
function kthenaManifest(name: string, namespace: string, replicas: number, image: string, rolling: Record<string, unknown>) {
  return {
    apiVersion: 'workload.serving.volcano.sh/v1alpha1',
    kind: 'ModelServing',
    metadata: { name, namespace },
    spec: {
      replicas,
      rolloutStrategy: { type: 'ServingGroupRollingUpdate', rollingUpdateConfiguration: rolling },
      template: { roles: [roleManifest({ name: 'main', replicas: 1, workerReplicas: 1, image })] },
    },
  };
}
const imagePatch = (image: string) => ({ spec: { template: { roles: [roleManifest({ name: 'main', replicas: 1, workerReplicas: 1, image })] } } });

describe('ModelServing maxSurge', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('ms-surge');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('maxSurge 1, maxUnavailable 0: every pod event keeps 3 of 3 groups available; the surge group is ordinal 3 and goes at the end', async () => {
    const created = await createMs(sb, kthenaManifest('kt', sb.namespace, 3, IMAGE_A, { maxSurge: 1, maxUnavailable: 0 }));
    // The field is kept by the CRD (a structural schema would prune it silently).
    expect(created.spec).toMatchObject({ rolloutStrategy: { rollingUpdateConfiguration: { maxSurge: 1, maxUnavailable: 0 } } });
    await waitConverged(sb, 'kt', { podsPerGroup: 2 });

    let fewest = Number.POSITIVE_INFINITY;
    const groupsSeen = new Set<string>();
    let events = 0;
    const tracker = await trackPods(sb, 'kt', (pods) => {
      events++;
      fewest = Math.min(fewest, availableGroupNames(2, pods).length);
      for (const p of pods.values()) groupsSeen.add(groupOf(p));
    });
    await patchMs(sb, 'kt', imagePatch(IMAGE_B));
    const { ms, pods } = await waitConverged(sb, 'kt', { podsPerGroup: 2, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_B) });
    tracker.stop();

    expect(events).toBeGreaterThan(12); // 6 old pods replaced, 2 surge pods created and removed: many events were judged
    expect(fewest).toBe(3);
    expect([...groupsSeen].sort()).toEqual(['kt-0', 'kt-1', 'kt-2', 'kt-3']);
    expect([...new Set(pods.map(groupOf))].sort()).toEqual(['kt-0', 'kt-1', 'kt-2']);
    expect(ms.status).toMatchObject({ replicas: 3, updatedReplicas: 3, availableReplicas: 3 });
  });

  it('with partition 2 of 4: ordinals 0 and 1 keep their pods, 2 and 3 roll through surge ordinal 4 with none unavailable, and a lost protected group comes back on CurrentRevision', async () => {
    await createMs(sb, kthenaManifest('kp', sb.namespace, 4, IMAGE_A, { maxSurge: 1, maxUnavailable: 0, partition: 2 }));
    const before = await waitConverged(sb, 'kp', { podsPerGroup: 2 });
    const a = before.ms.status?.updateRevision ?? '';
    const protectedUids = uidsOf(before.pods, (p) => ['kp-0', 'kp-1'].includes(groupOf(p)));

    let fewest = Number.POSITIVE_INFINITY;
    const groupsSeen = new Set<string>();
    const protectedTouched: string[] = [];
    const tracker = await trackPods(sb, 'kp', (pods) => {
      fewest = Math.min(fewest, availableGroupNames(2, pods).length);
      for (const p of pods.values()) {
        groupsSeen.add(groupOf(p));
        const name = p.metadata?.name ?? '';
        if (name in protectedUids && (p.metadata?.uid !== protectedUids[name] || p.metadata?.deletionTimestamp)) protectedTouched.push(name);
      }
    });
    await patchMs(sb, 'kp', imagePatch(IMAGE_B));
    const rolled = await waitConverged(sb, 'kp', {
      podsPerGroup: 2,
      extra: (m, ps) => m.status?.updatedReplicas === 2 && ps.filter((p) => ['kp-2', 'kp-3'].includes(groupOf(p))).every((p) => imageOf(p) === IMAGE_B),
    });
    tracker.stop();
    const b = rolled.ms.status?.updateRevision ?? '';
    expect(b).not.toBe(a);
    expect(fewest).toBe(4);
    expect(protectedTouched).toEqual([]);
    expect(groupsSeen.has('kp-4')).toBe(true);
    expect(groupsSeen.has('kp-5')).toBe(false);
    expect(rolled.ms.status).toMatchObject({ currentRevision: a, updateRevision: b, currentReplicas: 2, updatedReplicas: 2 });
    expect(Object.fromEntries(rolled.pods.map((p) => [p.metadata?.name, revisionOf(p)]))).toMatchObject({
      'kp-0-main-0-0': a,
      'kp-1-main-0-0': a,
      'kp-2-main-0-0': b,
      'kp-3-main-0-0': b,
    });

    // Seed 004's hidden behaviour with surge on: a protected group's pod is lost; it is rebuilt on A.
    await sb.core.deleteNamespacedPod({ name: 'kp-1-main-0-1', namespace: sb.namespace });
    const healed = await waitConverged(sb, 'kp', {
      podsPerGroup: 2,
      extra: (_m, ps) => ps.some((p) => p.metadata?.name === 'kp-1-main-0-1' && p.metadata.uid !== protectedUids['kp-1-main-0-1']),
    });
    for (const p of healed.pods.filter((x) => ['kp-0', 'kp-1'].includes(groupOf(x)))) {
      expect([revisionOf(p), imageOf(p)]).toEqual([a, IMAGE_A]);
    }
    expect((await listPods(sb, 'kp')).some((p) => groupOf(p) === 'kp-4')).toBe(false);
  });

  it('RoleRollingUpdate with a role maxSurge 1 and maxUnavailable 0: every role keeps its instances ready; the surge instance is index 2', async () => {
    const roles = (image: string): RoleOptions[] => [{ name: 'prefill', replicas: 2, workerReplicas: 0, image, maxSurge: 1, maxUnavailable: 0 }];
    const manifest = {
      apiVersion: 'workload.serving.volcano.sh/v1alpha1',
      kind: 'ModelServing',
      metadata: { name: 'kr', namespace: sb.namespace },
      spec: { replicas: 2, rolloutStrategy: { type: 'RoleRollingUpdate' }, template: { roles: roles(IMAGE_A).map(roleManifest) } },
    };
    await createMs(sb, manifest);
    await waitConverged(sb, 'kr', { podsPerGroup: 2 });
    let fewest = Number.POSITIVE_INFINITY;
    const idsSeen = new Set<string>();
    const tracker = await trackPods(sb, 'kr', (pods) => {
      for (const g of ['kr-0', 'kr-1']) {
        const ready = [...pods.values()].filter((p) => groupOf(p) === g && isReady(p));
        fewest = Math.min(fewest, ready.length);
      }
      for (const p of pods.values()) idsSeen.add(label(p, 'modelserving.volcano.sh/role-id') ?? '');
    });
    await patchMs(sb, 'kr', { spec: { template: { roles: roles(IMAGE_B).map(roleManifest) } } });
    const { pods } = await waitConverged(sb, 'kr', { podsPerGroup: 2, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_B) });
    tracker.stop();
    expect(fewest).toBe(2);
    expect([...idsSeen].sort()).toEqual(['prefill-0', 'prefill-1', 'prefill-2']);
    expect(pods.map((p) => label(p, 'modelserving.volcano.sh/role-id')).sort()).toEqual(['prefill-0', 'prefill-0', 'prefill-1', 'prefill-1']);
    await waitFor('status to settle', 10_000, async () => (await mustGetMs(sb, 'kr')).status?.updatedReplicas === 2);
  });
});
