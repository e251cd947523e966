import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { EPP_QUEUE, EppEmitter, LEGACY_EPP_QUEUE } from '../fixtures/epp-emitter.js';
import { waitFor } from '../harness/sandbox.js';
import { createDeployment, createVA } from './autoscaler-helpers.js';
import { startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

// Issue 31 item 3: a current EPP exports its flow-control queue as llm_d_epp_flow_control_queue_size;
// an older one as inference_extension_flow_control_queue_size. Scale from zero reads the new name,
// falls back to the old one per EPP, and never counts an EPP twice while it exports both.
describe('reconcile-autoscaler: scale from zero reads the renamed EPP queue metric, with the old name as fallback (issue 31 item 3)', () => {
  let loop: Loop;
  const epp = new EppEmitter();

  beforeAll(async () => {
    const eppTarget = await epp.start();
    loop = await startLoop('as-epp', { extraTargets: [eppTarget] });
  });
  afterAll(async () => {
    await loop?.stop();
    await epp.stop();
  });

  it('new name only → woken; old name only → woken; both on one EPP → the new one counts (0 stays at 0)', async () => {
    const { sb } = loop;
    // Three models at zero (their Deployments at 0 replicas), one variant each.
    for (const name of ['epp-new', 'epp-old', 'epp-both']) {
      await createDeployment(sb, name, 0);
      await createVA(sb, name, { model: `${name}-model` });
    }
    epp.set(sb.namespace, 'epp-new-model', 2, EPP_QUEUE);
    epp.set(sb.namespace, 'epp-old-model', 2, LEGACY_EPP_QUEUE);
    epp.set(sb.namespace, 'epp-both-model', 0, EPP_QUEUE);
    epp.set(sb.namespace, 'epp-both-model', 5, LEGACY_EPP_QUEUE);
    await waitFor('the EPP series in Prometheus', 30_000, async () => {
      const r = await loop.query(`count({__name__=~"${EPP_QUEUE}|${LEGACY_EPP_QUEUE}",namespace="${sb.namespace}"})`);
      return r[0]?.value === 4 ? true : undefined;
    });

    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'epp-new' }, 1);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'epp-old' }, 1);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'epp-both' }, 0);
    const record = await readCycleRecord(sb.redis, sb.prefix);
    const atZero = Object.fromEntries((record?.atZero ?? []).map((m) => [m.key, m.pending]));
    expect(atZero).toEqual({ [`epp-new-model|${sb.namespace}`]: '2', [`epp-old-model|${sb.namespace}`]: '2', [`epp-both-model|${sb.namespace}`]: '0' });
  });
});
