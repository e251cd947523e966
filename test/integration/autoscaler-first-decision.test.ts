import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { condition, createDeployment, createVA, loadPods, waitForCondition } from './autoscaler-helpers.js';
import { STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

/** "At once": well under one tick, which is an hour here; no cycle is run by hand in this file. */
const AT_ONCE_MS = 25_000;

// Issue 14 scenario 1 (seed 003 example 2, "no 60 s wait"): when a VA's Deployment appears, or a VA is
// created for a Deployment that exists, its first desired value and Ready come without waiting for
// the next GLOBAL_OPT_INTERVAL tick (an hour here).
describe('reconcile-autoscaler: the first decision comes at once (issue 14 scenario 1)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-first');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it('VA before its Deployment: the Deployment Create brings desiredOptimizedAlloc, Ready and the scraped metric without a tick', async () => {
    const { sb, emitter } = loop;
    await createVA(sb, 'fd1', { model: 'fd1-model' });
    await waitForCondition(sb, 'fd1', 'TargetResolved', 'False', 'TargetNotFound', AT_ONCE_MS);
    const created = Date.now();
    await createDeployment(sb, 'fd1', 2);
    // The pods report as soon as they run, as vLLM pods do once ready.
    await loadPods(sb, emitter, 'fd1', 'fd1-model', 2, STEADY);
    const ready = await waitForCondition(sb, 'fd1', 'Ready', 'True', undefined, AT_ONCE_MS);
    expect(Date.now() - created).toBeLessThan(AT_ONCE_MS + 5_000);
    expect(ready.status?.desiredOptimizedAlloc).toMatchObject({ accelerator: 'A100', numReplicas: 2 });
    expect(condition(ready.status, 'MetricsAvailable')).toMatchObject({ status: 'True', reason: 'MetricsFound' });
    expect(condition(ready.status, 'OptimizationReady')).toMatchObject({ status: 'True', reason: 'OptimizationSucceeded' });
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'fd1' }, 2);
    // The cycle was asked for by the VA's reconcile (and re-run until its pods reported), not by a tick.
    const cycles = loop.calls.filter((c) => c.key === '@optimize' && c.at >= created);
    expect(cycles.length).toBeGreaterThan(0);
    expect(cycles.map((c) => c.reason)).not.toContain('resync');
  });

  it('Deployment before the VA, with metrics: the VA Create brings the first decision and Ready without a tick', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'fd2', 1);
    await loadPods(sb, emitter, 'fd2', 'fd2-model', 1, STEADY);
    await loop.waitForVllmSeries('fd2-model', 1);
    const created = Date.now();
    await createVA(sb, 'fd2', { model: 'fd2-model' });
    const ready = await waitForCondition(sb, 'fd2', 'Ready', 'True', undefined, AT_ONCE_MS);
    expect(Date.now() - created).toBeLessThan(AT_ONCE_MS + 5_000);
    expect(ready.status?.desiredOptimizedAlloc?.numReplicas).toBe(1);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'fd2' }, 1);
  });
});
