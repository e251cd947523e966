import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';
import { condition, createDeployment, createVA, loadPods, runningPods, scaleDeployment, waitForCondition } from './autoscaler-helpers.js';
import { HOT, STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

// Issue 14 scenario 3: a VA that takes no part in a cycle (its Deployment scaled to 0 by hand, or a
// second VA on a Deployment another VA already scales) must stop publishing its old decision, and
// its status must say why instead of "MetricsFound, from N pods". Observed through the scraped metric.
describe('reconcile-autoscaler: decisions of inactive VAs are not published (issue 14 scenario 3)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-inactive');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it('a Deployment scaled to 0 by hand: its old desired is no longer exported (0 is), and the VA says why', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'zero', 2);
    await createVA(sb, 'zero', { model: 'zero-model' });
    await loadPods(sb, emitter, 'zero', 'zero-model', 2, STEADY);
    await loop.waitForVllmSeries('zero-model', 2);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'zero' }, 2);
    await waitForCondition(sb, 'zero', 'MetricsAvailable', 'True', 'MetricsFound');

    await scaleDeployment(sb, 'zero', 0);
    await loop.cycle();
    // KEDA reading a 2 here would scale the Deployment straight back up (and no series at all would
    // send it to its fallback replicas): 0 keeps it where it is.
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'zero' }, 0);
    const va = await waitForCondition(sb, 'zero', 'OptimizationReady', 'False', 'SkippedProcessing');
    expect(condition(va.status, 'OptimizationReady')?.message).toContain('Deployment zero has 0 replicas');
    expect(condition(va.status, 'MetricsAvailable')).toMatchObject({ status: 'False', reason: 'MetricsMissing' });
    expect(condition(va.status, 'ScalingReady')?.message).toContain('Deployment zero has 0 replicas');
  });

  it('a second VA on one Deployment: its frozen decision does not win the scrape, and it says which VA owns the Deployment', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'dup', 1);
    const pods = await loadPods(sb, emitter, 'dup', 'dup-model', 1, HOT);
    await loop.waitForVllmSeries('dup-model', 1);
    // dup-b alone first: the hot pod makes it ask for 2.
    await createVA(sb, 'dup-b', { model: 'dup-model', target: 'dup' });
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'dup-b' }, 2);

    // The hot pod is replaced by a steady one, and dup-a (first by name) takes the Deployment over:
    // 1 replica is enough now.
    await sb.core.deleteNamespacedPod({ name: pods[0]!, namespace: sb.namespace, gracePeriodSeconds: 0 });
    const fresh = await waitFor('a replacement pod', 60_000, async () => {
      const names = await runningPods(sb, 'dup');
      return names.length === 1 && names[0] !== pods[0] ? names : undefined;
    }, 250);
    emitter.remove(sb.namespace, pods[0]!);
    emitter.set(sb.namespace, 'dup-model', fresh[0]!, STEADY);
    await loop.waitForVllmSeries('dup-model', 1);
    await createVA(sb, 'dup-a', { model: 'dup-model', target: 'dup' });
    await waitForCondition(sb, 'dup-a', 'TargetResolved', 'True');
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'dup-a' }, 1);
    // variant_name is each VA's name: dup-b's frozen 2 is gone, not merely outvoted.
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'dup-b' }, undefined);
    expect(await loop.scrapedCount('wva_desired_replicas', { variant_name: 'dup-a' })).toBe(1);
    const b = await waitForCondition(sb, 'dup-b', 'OptimizationReady', 'False', 'SkippedProcessing');
    expect(condition(b.status, 'OptimizationReady')?.message).toContain('already scaled by VariantAutoscaling dup-a');
  });
});
