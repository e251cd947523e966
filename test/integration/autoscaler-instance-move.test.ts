import { afterAll, beforeAll, describe, it } from 'vitest';
import { kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { createDeployment, createVA, loadPods } from './autoscaler-helpers.js';
import { STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

const INSTANCE_LABEL = 'wva.llmd.ai/controller-instance';

// Issue 14 scenario 4: a VA relabelled to another controller instance must stop being exported by
// the instance it left, or an HPA whose selector leaves out controller_instance sums both (≈ 2×).
// VA Update events are blocked (seed 003): the next cycle notices. Observed through the scraped metric.
describe('reconcile-autoscaler: no series leak when a VA moves to another controller instance (issue 14 scenario 4)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-instance', { env: { CONTROLLER_INSTANCE: 'blue' } });
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it('exported by "blue" while labelled blue; relabelled "green" → gone from blue at the next cycle', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'mv', 2);
    await createVA(sb, 'mv', { model: 'mv-model' });
    await kubeRequest(sb.kc, objectPath(Resources.variantAutoscaling, sb.namespace, 'mv'), {
      method: 'PATCH',
      body: { metadata: { labels: { [INSTANCE_LABEL]: 'blue' } } },
      contentType: 'application/merge-patch+json',
    });
    await loadPods(sb, emitter, 'mv', 'mv-model', 2, STEADY);
    await loop.waitForVllmSeries('mv-model', 2);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'mv', controller_instance: 'blue' }, 2);

    await kubeRequest(sb.kc, objectPath(Resources.variantAutoscaling, sb.namespace, 'mv'), {
      method: 'PATCH',
      body: { metadata: { labels: { [INSTANCE_LABEL]: 'green' } } },
      contentType: 'application/merge-patch+json',
    });
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'mv', controller_instance: 'blue' }, undefined);
  });
});
