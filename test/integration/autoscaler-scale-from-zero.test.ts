import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { EppEmitter, LEGACY_EPP_QUEUE } from '../fixtures/epp-emitter.js';
import { waitFor } from '../harness/sandbox.js';
import { condition, createDeployment, createVA, loadPods, readVA, runningPods, scaleDeployment, upsertConfigMap, waitForCondition } from './autoscaler-helpers.js';
import { STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

/** WVA v0.5.0's name of the gateway's queue gauge: the scenario as issue 14 wrote it. */
const LEGACY = LEGACY_EPP_QUEUE;
const MODEL = 'sfz-model';

// Issue 14 scenario 5: scale-to-zero was a one-way door. Once the enforcer's 0 had been applied, the
// VA was left out of every cycle and nothing ever published more than 0 again. WVA v0.5.0's
// scale-from-zero engine wakes a model at zero when requests wait in the inference gateway's
// flow-control queue; here it is observed through the scraped wva_desired_replicas and the decision.
describe('reconcile-autoscaler: scale from zero when requests wait in the inference gateway (issue 14 scenario 5)', () => {
  let loop: Loop;
  const epp = new EppEmitter();

  async function eppScraped(value: number): Promise<void> {
    await waitFor(`the EPP queue of ${MODEL} = ${value} in Prometheus`, 30_000, async () => {
      const r = await loop.query(`sum(${LEGACY}{namespace="${loop.sb.namespace}",target_model_name="${MODEL}"})`);
      return r.length === 1 && r[0]?.value === value ? true : undefined;
    });
  }

  beforeAll(async () => {
    const eppTarget = await epp.start();
    loop = await startLoop('as-fromzero', { extraTargets: [eppTarget] });
    await upsertConfigMap(loop.sb, 'model-scale-to-zero-config', {
      sfz: `model_id: ${MODEL}\nnamespace: ${loop.sb.namespace}\nenable_scale_to_zero: true\nretention_period: 1m\n`,
    });
  });
  afterAll(async () => {
    await loop?.stop();
    await epp.stop();
  });

  it('the enforcer sends an idle model to 0; requests waiting in the gateway bring its cheapest variant back to desired 1', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'sfz-cheap', 1);
    await createDeployment(sb, 'sfz-dear', 1);
    await createVA(sb, 'sfz-cheap', { model: MODEL, cost: '10' });
    await createVA(sb, 'sfz-dear', { model: MODEL, cost: '40' });
    const cheapPods = await loadPods(sb, emitter, 'sfz-cheap', MODEL, 1, STEADY);
    const dearPods = await loadPods(sb, emitter, 'sfz-dear', MODEL, 1, STEADY);
    epp.set(sb.namespace, MODEL, 0, LEGACY);
    await loop.waitForVllmSeries(MODEL, 2);
    await eppScraped(0);
    await waitFor('no request over the retention period', 30_000, async () => {
      const r = await loop.query(`sum(increase(vllm:request_success_total{namespace="${sb.namespace}",model_name="${MODEL}"}[1m]))`);
      return r.length === 1 && r[0]?.value === 0 ? true : undefined;
    });

    // Idle: the enforcer decides 0 for both, and the HPA/KEDA (played here) scales them to 0.
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sfz-cheap' }, 0);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sfz-dear' }, 0);
    await scaleDeployment(sb, 'sfz-cheap', 0);
    await scaleDeployment(sb, 'sfz-dear', 0);
    for (const pod of [...cheapPods, ...dearPods]) emitter.remove(sb.namespace, pod);
    await waitFor('the pods gone', 60_000, async () => ((await runningPods(sb, 'sfz-cheap')).length + (await runningPods(sb, 'sfz-dear')).length === 0 ? true : undefined), 250);
    await loop.cycle();
    await waitForCondition(sb, 'sfz-cheap', 'OptimizationReady', 'False', 'SkippedProcessing');
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sfz-cheap' }, 0);

    // Requests arrive: the gateway queues them, as there is no pod to send them to.
    epp.set(sb.namespace, MODEL, 3, LEGACY);
    await eppScraped(3);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sfz-cheap' }, 1);
    // One variant is enough to serve: the dearer one stays at 0.
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sfz-dear' }, 0);
    const record = await readCycleRecord(sb.redis, sb.prefix);
    expect(record?.decisions.find((d) => d.key === `${sb.namespace}/sfz-cheap`)).toMatchObject({ desiredReplicas: 1, source: 'scale-from-zero' });
    const va = await waitForCondition(sb, 'sfz-cheap', 'OptimizationReady', 'True');
    expect(va.status?.desiredOptimizedAlloc?.numReplicas).toBe(1);
    expect(condition(va.status, 'OptimizationReady')?.message).toContain('scale from zero');
  });

  it('without a tick: while the gateway is scraped, a model at zero is looked at again within seconds', async () => {
    const { sb } = loop;
    // The demand goes away before anything scaled up: back to 0.
    epp.set(sb.namespace, MODEL, 0, LEGACY);
    await eppScraped(0);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sfz-cheap' }, 0);

    // GLOBAL_OPT_INTERVAL is 1h here: only the quick re-check of a model at zero can see this.
    epp.set(sb.namespace, MODEL, 2, LEGACY);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sfz-cheap' }, 1, 45_000);
  });

  it('woken up, its first pod reporting no requests yet: the enforcer does not send it back to 0 while requests wait', async () => {
    const { sb, emitter } = loop;
    await scaleDeployment(sb, 'sfz-cheap', 1);
    await loadPods(sb, emitter, 'sfz-cheap', MODEL, 1, STEADY);
    await loop.waitForVllmSeries(MODEL, 1);
    await waitFor('the new pod counted as idle over the retention period', 30_000, async () => {
      const r = await loop.query(`sum(increase(vllm:request_success_total{namespace="${sb.namespace}",model_name="${MODEL}"}[1m]))`);
      return r.length === 1 && r[0]?.value === 0 ? true : undefined;
    });
    // Quick re-checks may run beside the cycles asked for here: wait for one that saw the new pod report.
    const record = await waitFor('a cycle that saw the woken pod report', 30_000, async () => {
      await loop.cycle();
      const r = await readCycleRecord(sb.redis, sb.prefix);
      return r?.models.find((m) => m.key === `${MODEL}|${sb.namespace}`)?.replicas === 1 ? r : undefined;
    });
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sfz-cheap' }, 1);
    expect(record.decisions.find((d) => d.key === `${sb.namespace}/sfz-cheap`)).toMatchObject({ desiredReplicas: 1 });
    expect(record.decisions.find((d) => d.key === `${sb.namespace}/sfz-cheap`)?.source).not.toBe('scale-to-zero');
    expect(record.models.find((m) => m.key === `${MODEL}|${sb.namespace}`)?.note).toContain('requests are waiting in the inference gateway');
    expect((await readVA(sb, 'sfz-cheap')).status?.desiredOptimizedAlloc?.numReplicas).toBe(1);
  });
});
