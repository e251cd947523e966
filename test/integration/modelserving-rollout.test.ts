// Rolling updates and recovery on the sandbox, watched pod event by pod event: the maxUnavailable
// budget is never exceeded, a RoleRollingUpdate leaves the other role's pods (their UIDs) alone, and
// ServingGroupRecreate rebuilds a whole group, under its own name, after one of its pods is deleted.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';
import {
  IMAGE_A,
  IMAGE_B,
  createMs,
  groupOf,
  imageOf,
  isReady,
  label,
  modelServingFunctions,
  msManifest,
  patchMs,
  rolesPatch,
  trackPods,
  unavailableGroups,
  waitConverged,
  type RoleOptions,
} from '../fixtures/modelserving-fixtures.js';

const uids = (pods: readonly V1Pod[], test: (p: V1Pod) => boolean) =>
  Object.fromEntries(pods.filter(test).map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));

describe('ModelServing rollout and recovery', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('ms-roll');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('maxUnavailable=2 with 4 replicas: never more than 2 groups unavailable while every group rolls', async () => {
    const roles = (image: string): RoleOptions[] => [{ name: 'main', replicas: 1, workerReplicas: 1, image }];
    await createMs(sb, msManifest('mu', sb.namespace, { replicas: 4, maxUnavailable: 2, roles: roles(IMAGE_A) }));
    await waitConverged(sb, 'mu', { podsPerGroup: 2 });
    let worst = 0;
    const tracker = await trackPods(sb, 'mu', (pods) => {
      worst = Math.max(worst, unavailableGroups('mu', 4, 2, pods));
    });
    await patchMs(sb, 'mu', rolesPatch(roles(IMAGE_B)));
    const { pods } = await waitConverged(sb, 'mu', { podsPerGroup: 2, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_B) });
    tracker.stop();
    expect(pods).toHaveLength(8);
    expect(worst).toBeLessThanOrEqual(2);
    // The budget was used (two groups at a time), not just respected by going one by one.
    expect(worst).toBe(2);
  });

  it('RoleRollingUpdate: changing only prefill rolls prefill instances (within their maxUnavailable) and leaves decode pod UIDs unchanged', async () => {
    const roles = (prefillImage: string): RoleOptions[] => [
      { name: 'prefill', replicas: 2, workerReplicas: 1, image: prefillImage, maxUnavailable: 1 },
      { name: 'decode', replicas: 1, workerReplicas: 0, image: IMAGE_A },
    ];
    await createMs(sb, msManifest('rr', sb.namespace, { replicas: 2, rolloutType: 'RoleRollingUpdate', roles: roles(IMAGE_A) }));
    const before = await waitConverged(sb, 'rr', { podsPerGroup: 5 });
    const decodeBefore = uids(before.pods, (p) => label(p, 'modelserving.volcano.sh/role') === 'decode');
    let worstPerGroup = 0;
    const tracker = await trackPods(sb, 'rr', (pods) => {
      for (const group of ['rr-0', 'rr-1']) {
        let down = 0;
        for (const id of ['prefill-0', 'prefill-1']) {
          const inst = [...pods.values()].filter((p) => groupOf(p) === group && label(p, 'modelserving.volcano.sh/role-id') === id && !p.metadata?.deletionTimestamp);
          if (inst.length !== 2 || !inst.every(isReady)) down++;
        }
        worstPerGroup = Math.max(worstPerGroup, down);
      }
    });
    await patchMs(sb, 'rr', rolesPatch(roles(IMAGE_B)));
    const after = await waitConverged(sb, 'rr', {
      podsPerGroup: 5,
      extra: (_m, ps) => ps.filter((p) => label(p, 'modelserving.volcano.sh/role') === 'prefill').every((p) => imageOf(p) === IMAGE_B),
    });
    tracker.stop();
    expect(uids(after.pods, (p) => label(p, 'modelserving.volcano.sh/role') === 'decode')).toEqual(decodeBefore);
    expect(after.pods.filter((p) => label(p, 'modelserving.volcano.sh/role') === 'prefill').every((p) => !Object.values(uids(before.pods, () => true)).includes(p.metadata?.uid ?? ''))).toBe(true);
    expect(worstPerGroup).toBe(1);
  });

  it('ServingGroupRecreate: deleting one pod of a group replaces the whole group under the same name; the other group is untouched', async () => {
    const roles: RoleOptions[] = [{ name: 'main', replicas: 1, workerReplicas: 1, image: IMAGE_A }];
    await createMs(sb, msManifest('sg', sb.namespace, { replicas: 2, recoveryPolicy: 'ServingGroupRecreate', roles }));
    const before = await waitConverged(sb, 'sg', { podsPerGroup: 2 });
    const group0 = uids(before.pods, (p) => groupOf(p) === 'sg-0');
    const group1 = uids(before.pods, (p) => groupOf(p) === 'sg-1');
    await sb.core.deleteNamespacedPod({ name: 'sg-0-main-0-1', namespace: sb.namespace });
    const after = await waitConverged(sb, 'sg', {
      podsPerGroup: 2,
      extra: (_m, ps) => ps.filter((p) => groupOf(p) === 'sg-0').every((p) => !Object.values(group0).includes(p.metadata?.uid ?? '')),
    });
    // Both pods of sg-0 are new (the entry pod too, though it was never touched), same names.
    expect(Object.keys(uids(after.pods, (p) => groupOf(p) === 'sg-0')).sort()).toEqual(Object.keys(group0).sort());
    expect(uids(after.pods, (p) => groupOf(p) === 'sg-1')).toEqual(group1);
  });
});
