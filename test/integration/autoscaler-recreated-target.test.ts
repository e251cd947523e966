import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, createVA, deleteDeployment, loadPods, readVA, runningPods, waitForCondition } from './autoscaler-helpers.js';
import { HOT, STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';
import { waitFor } from '../harness/sandbox.js';

// Issue 14 scenario 2: a decision made for a Deployment that was deleted must not become the
// "previous decision" of the Deployment recreated under the same name. Observed as an HPA sees it:
// through the wva_desired_replicas series Prometheus scrapes from Ripple.
describe('reconcile-autoscaler: no stale desired after the Deployment is recreated (issue 14 scenario 2)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-recreate');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it('desired 3 for the old Deployment; recreated with 1 replica and steady load → the next cycle publishes 1, not 3', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'rc', 2);
    await createVA(sb, 'rc', { model: 'rc-model' });
    const oldPods = await loadPods(sb, emitter, 'rc', 'rc-model', 2, HOT);
    await loop.waitForVllmSeries('rc-model', 2);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'rc' }, 3);
    expect((await readVA(sb, 'rc')).status?.desiredOptimizedAlloc?.numReplicas).toBe(3);

    await deleteDeployment(sb, 'rc');
    await waitForCondition(sb, 'rc', 'TargetResolved', 'False', 'TargetNotFound');
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'rc' }, undefined);
    for (const pod of oldPods) emitter.remove(sb.namespace, pod);
    await waitFor('the old pods to go', 60_000, async () => (await runningPods(sb, 'rc')).every((p) => !oldPods.includes(p)));

    await createDeployment(sb, 'rc', 1);
    await loadPods(sb, emitter, 'rc', 'rc-model', 1, STEADY);
    await loop.waitForVllmSeries('rc-model', 1);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'rc' }, 1);
    const va = await waitForCondition(sb, 'rc', 'Ready', 'True');
    expect(va.status?.desiredOptimizedAlloc?.numReplicas).toBe(1);
    expect(va.status?.currentAllocation?.numReplicas).toBe(1);
  });
});
