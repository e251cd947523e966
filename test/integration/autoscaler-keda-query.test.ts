import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { createDeployment, createVA, loadPods } from './autoscaler-helpers.js';
import { STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';
import { waitFor } from '../harness/sandbox.js';

const scaledObjectSchema = z.object({
  kind: z.literal('ScaledObject'),
  spec: z.object({ triggers: z.array(z.object({ type: z.string(), metadata: z.object({ query: z.string() }) })) }),
});

/** The example's query, pointed at this test's VA and namespace. */
function exampleQuery(variant: string, namespace: string): string {
  const docs = parseAllDocuments(readFileSync('infra/examples/autoscaler/keda-scaledobject.yaml', 'utf8')).map((d) => d.toJS() as unknown);
  const so = scaledObjectSchema.parse(docs.find((d) => scaledObjectSchema.safeParse(d).success));
  const query = so.spec.triggers.find((t) => t.type === 'prometheus')?.metadata.query ?? '';
  return query.replaceAll('llama-8b-a100-va', variant).replaceAll('llm-inference', namespace);
}

// Issue 14 scenario 6: during an ops-server rollout two Ripple processes export the same wva_*
// series; KEDA's Prometheus scaler fails on a query returning several elements ("returned multiple
// elements") and falls back. The example's query must aggregate to one element.
describe('reconcile-autoscaler: the KEDA example survives two exporters (issue 14 scenario 6)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-keda', { exporters: 2 });
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it("the ScaledObject's query returns exactly one element, the desired replicas, while two processes export", async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'kq', 2);
    await createVA(sb, 'kq', { model: 'kq-model' });
    await loadPods(sb, emitter, 'kq', 'kq-model', 2, STEADY);
    await loop.waitForVllmSeries('kq-model', 2);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'kq' }, 2);
    // Both exporters are scraped: two series of the same VA, one per instance.
    await waitFor('the series from both exporters', 20_000, async () => (await loop.scrapedCount('wva_desired_replicas', { variant_name: 'kq' })) === 2);
    const result = await loop.query(exampleQuery('kq', sb.namespace));
    expect(result).toHaveLength(1);
    expect(result[0]?.value).toBe(2);
  });
});
