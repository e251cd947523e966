// Seed 004 on the sandbox: partition revision control, step by step. Story 1 (scale-up fills a gap
// in the partition on CurrentRevision, new ordinals on the new revision), Story 2 (a rolling update
// leaves ordinals below the partition alone, highest ordinal first), and Kthena's e2e "partition 3 of
// 5, scale to 7, back to 3". Every pod the API server reports is recorded through a watch, so a pod
// that existed only for a moment on the wrong revision would still be caught.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  IMAGE_A,
  IMAGE_B,
  createMs,
  groupOf,
  imageOf,
  listPods,
  modelServingFunctions,
  msManifest,
  mustGetMs,
  patchMs,
  revisionOf,
  rolesPatch,
  waitConverged,
  watchPods,
} from '../fixtures/modelserving-fixtures.js';

const ordinal = (p: V1Pod) => Number(groupOf(p).split('-').pop());
const one = (image: string) => [{ name: 'main', replicas: 1, workerReplicas: 0, image }];

/** Every pod version seen, in order, with the kind of watch event. */
interface Seen {
  type: string;
  name: string;
  uid: string;
  ordinal: number;
  revision: string;
  image: string;
  deleting: boolean;
}

async function record(sb: TestSandbox, name: string) {
  const seen: Seen[] = [];
  const w = await watchPods(sb, name, (type, p) =>
    seen.push({
      type,
      name: p.metadata?.name ?? '',
      uid: p.metadata?.uid ?? '',
      ordinal: ordinal(p),
      revision: revisionOf(p),
      image: imageOf(p),
      deleting: Boolean(p.metadata?.deletionTimestamp),
    }),
  );
  return { seen, stop: () => w.stop() };
}

function byOrdinal(pods: V1Pod[]): Record<number, { revision: string; image: string }> {
  return Object.fromEntries(pods.map((p) => [ordinal(p), { revision: revisionOf(p), image: imageOf(p) }]));
}

describe('ModelServing partition (seed 004)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple | undefined;

  beforeAll(async () => {
    sb = await openSandbox('ms-part');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('Story 1: a group lost below the partition is recreated on CurrentRevision, then new ordinals on the new revision', async () => {
    // Stage 1: on revision A, partition 3.
    await createMs(sb, msManifest('s1', sb.namespace, { replicas: 3, partition: 3, roles: one(IMAGE_A) }));
    const a = (await waitConverged(sb, 's1', { podsPerGroup: 1 })).ms.status?.updateRevision ?? '';
    // The template moves to revision B; every group is protected, so nothing rolls.
    await patchMs(sb, 's1', rolesPatch(one(IMAGE_B)));
    const afterChange = await waitFor('status to show the update revision', 30_000, async () => {
      const ms = await mustGetMs(sb, 's1');
      return ms.status?.observedGeneration === ms.metadata.generation && ms.status.updateRevision !== a ? ms : false;
    });
    const b = afterChange.status?.updateRevision ?? '';
    expect(afterChange.status).toMatchObject({ currentRevision: a, updatedReplicas: 0, currentReplicas: 3, availableReplicas: 3 });
    expect((await listPods(sb, 's1')).every((p) => revisionOf(p) === a)).toBe(true);

    // Stage 2: R-1 is lost while the controller is down (a node failure); the user scales to 5.
    await ripple?.stop();
    ripple = undefined;
    await sb.core.deleteNamespacedPod({ name: 's1-1-main-0-0', namespace: sb.namespace, gracePeriodSeconds: 0 });
    await waitFor('R-1 gone', 30_000, async () => !(await listPods(sb, 's1')).some((p) => groupOf(p) === 's1-1'));
    await patchMs(sb, 's1', { spec: { replicas: 5 } });
    const before = new Set((await listPods(sb, 's1')).map((p) => p.metadata?.uid));
    const rec = await record(sb, 's1');
    ripple = await startRipple(sb, modelServingFunctions());

    // Stages 3–6: R-1 recreated on A (not R-5 at the end), R-3 and R-4 created on B.
    const { ms, pods } = await waitConverged(sb, 's1', { podsPerGroup: 1 });
    rec.stop();
    expect(byOrdinal(pods)).toEqual({
      0: { revision: a, image: IMAGE_A },
      1: { revision: a, image: IMAGE_A },
      2: { revision: a, image: IMAGE_A },
      3: { revision: b, image: IMAGE_B },
      4: { revision: b, image: IMAGE_B },
    });
    // A watch starts with the existing pods as ADDED; the new ones are those not there before.
    const added = rec.seen.filter((s) => s.type === 'ADDED' && !before.has(s.uid));
    expect(added.map((s) => s.ordinal).sort()).toEqual([1, 3, 4]);
    expect(rec.seen.every((s) => (s.ordinal < 3 ? s.revision === a : s.revision === b) && s.ordinal < 5)).toBe(true);
    expect(ms.status).toMatchObject({ replicas: 5, availableReplicas: 5, currentRevision: a, updateRevision: b, currentReplicas: 3, updatedReplicas: 2 });
  });

  it('Story 2: a rolling update with partition 2 updates R-4, R-3, R-2 (highest first) and never touches R-0, R-1', async () => {
    await createMs(sb, msManifest('s2', sb.namespace, { replicas: 5, partition: 2, roles: one(IMAGE_A) }));
    const first = await waitConverged(sb, 's2', { podsPerGroup: 1 });
    const a = first.ms.status?.updateRevision ?? '';
    const protectedUids = first.pods.filter((p) => ordinal(p) < 2).map((p) => p.metadata?.uid);
    const rec = await record(sb, 's2');
    await patchMs(sb, 's2', rolesPatch(one(IMAGE_B)));
    const { ms, pods } = await waitConverged(sb, 's2', {
      podsPerGroup: 1,
      extra: (_m, ps) => ps.filter((p) => ordinal(p) >= 2).every((p) => imageOf(p) === IMAGE_B),
    });
    rec.stop();
    const b = ms.status?.updateRevision ?? '';
    expect(b).not.toBe(a);
    expect(byOrdinal(pods)).toEqual({
      0: { revision: a, image: IMAGE_A },
      1: { revision: a, image: IMAGE_A },
      2: { revision: b, image: IMAGE_B },
      3: { revision: b, image: IMAGE_B },
      4: { revision: b, image: IMAGE_B },
    });
    expect(pods.filter((p) => ordinal(p) < 2).map((p) => p.metadata?.uid)).toEqual(protectedUids);
    // Nothing below the partition was ever deleted; the outdated groups went highest ordinal first.
    const deletions = rec.seen.filter((s) => s.deleting || s.type === 'DELETED');
    expect(deletions.every((s) => s.ordinal >= 2)).toBe(true);
    const order = [...new Set(deletions.map((s) => s.ordinal))];
    expect(order).toEqual([4, 3, 2]);
    expect(ms.status).toMatchObject({ currentRevision: a, updateRevision: b, currentReplicas: 2, updatedReplicas: 3, availableReplicas: 5 });
  });

  it('partition 3 of 5: old below, new above; a lost protected pod comes back on the old revision; scale to 7 and back to 3', async () => {
    await createMs(sb, msManifest('p', sb.namespace, { replicas: 5, partition: 3, roles: one(IMAGE_A) }));
    const a = (await waitConverged(sb, 'p', { podsPerGroup: 1 })).ms.status?.updateRevision ?? '';
    await patchMs(sb, 'p', rolesPatch(one(IMAGE_B)));
    const updated = await waitConverged(sb, 'p', {
      podsPerGroup: 1,
      extra: (_m, ps) => ps.filter((p) => ordinal(p) >= 3).every((p) => imageOf(p) === IMAGE_B),
    });
    const b = updated.ms.status?.updateRevision ?? '';
    expect(updated.ms.status).toMatchObject({ currentRevision: a, updateRevision: b });
    expect(Object.values(byOrdinal(updated.pods)).map((x) => x.image)).toEqual([IMAGE_A, IMAGE_A, IMAGE_A, IMAGE_B, IMAGE_B]);

    // A pod of protected group 1 is deleted: rebuilt on the old revision and image.
    const old = updated.pods.find((p) => ordinal(p) === 1);
    await sb.core.deleteNamespacedPod({ name: old?.metadata?.name ?? '', namespace: sb.namespace });
    const rebuilt = await waitConverged(sb, 'p', {
      podsPerGroup: 1,
      extra: (_m, ps) => ps.some((p) => ordinal(p) === 1 && p.metadata?.uid !== old?.metadata?.uid),
    });
    expect(byOrdinal(rebuilt.pods)[1]).toEqual({ revision: a, image: IMAGE_A });

    await patchMs(sb, 'p', { spec: { replicas: 7 } });
    const seven = await waitConverged(sb, 'p', { podsPerGroup: 1 });
    expect(Object.values(byOrdinal(seven.pods)).map((x) => x.revision)).toEqual([a, a, a, b, b, b, b]);

    await patchMs(sb, 'p', { spec: { replicas: 3 } });
    const three = await waitConverged(sb, 'p', { podsPerGroup: 1 });
    expect(Object.values(byOrdinal(three.pods)).map((x) => x.image)).toEqual([IMAGE_A, IMAGE_A, IMAGE_A]);
    expect(three.ms.status).toMatchObject({ replicas: 3, updatedReplicas: 0, currentReplicas: 3, availableReplicas: 3, currentRevision: a });
  });
});
