import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeRequestText } from '../../kube/raw.js';
import { waitFor } from '../harness/sandbox.js';
import { condition, createDeployment, createVA, loadPods, readVA, waitForCondition } from './autoscaler-helpers.js';
import { STEADY, startLoop, type Loop } from './autoscaler-loop.js';

const VAS = 10;
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY']);

/** Write requests the API server has served for one resource, from its own apiserver_request_total. */
async function apiserverWrites(kc: KubeConfig, resource: string): Promise<number> {
  let total = 0;
  for (const line of (await kubeRequestText(kc, '/metrics')).split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    // Collection deletes (scope "namespace") come from the namespace controller retrying every
    // Terminating namespace of the shared sandbox, whatever test left it; Ripple writes single objects.
    if (labels['scope'] === 'namespace') continue;
    if (labels['resource'] === resource && WRITE_VERBS.has(labels['verb'] ?? '')) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

// Issue 14 scenario 8 and its "Done when": status is written only when it changes, so a steady cycle
// over converged VAs with unchanged load makes zero API writes (measured from the API server's own
// apiserver_request_total), and the time of the last cycle is a metric instead of a status write.
describe('reconcile-autoscaler: a steady cycle writes nothing (issue 14 scenario 8)', () => {
  let loop: Loop;
  const names = Array.from({ length: VAS }, (_, i) => `st${i}`);

  beforeAll(async () => {
    loop = await startLoop('as-steady');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it(`${VAS} converged VAs, unchanged load: two cycles make zero VA writes and leave every resourceVersion; wva_last_optimization_timestamp_seconds advances`, async () => {
    const { sb, emitter } = loop;
    for (const n of names) {
      await createDeployment(sb, n, 1);
      await createVA(sb, n, { model: `${n}-model` });
    }
    for (const n of names) await loadPods(sb, emitter, n, `${n}-model`, 1, STEADY);
    for (const n of names) await loop.waitForVllmSeries(`${n}-model`, 1);
    await loop.cycle();
    for (const n of names) await waitForCondition(sb, n, 'Ready', 'True');
    // Converged: one more cycle settles whatever the first wrote, then nothing may change.
    await loop.cycle();
    await loop.quiet();

    const lastRun = async () => (await loop.query('wva_last_optimization_timestamp_seconds'))[0]?.value;
    const firstStamp = (await lastRun()) ?? 0;
    const versions = new Map<string, string>();
    for (const n of names) versions.set(n, (await readVA(sb, n)).metadata.resourceVersion);
    const writesBefore = await apiserverWrites(sb.kc, 'variantautoscalings');
    const callsBefore = loop.calls.length;
    const writesAt = Date.now();

    await new Promise((r) => setTimeout(r, 1_100)); // the next cycle's timestamp is a later second
    await loop.cycle();
    await loop.quiet();
    await loop.cycle();
    await loop.quiet();

    // Every VA was reconciled by both cycles; none of them wrote.
    for (const n of names) expect(loop.calls.slice(callsBefore).filter((c) => c.key === `${sb.namespace}/${n}`).length, n).toBeGreaterThanOrEqual(2);
    for (const n of names) {
      const va = await readVA(sb, n);
      expect(va.metadata.resourceVersion, n).toBe(versions.get(n));
      expect(condition(va.status, 'Ready')?.status).toBe('True');
    }
    // The API server's own count (it has no namespace label: this assumes no other test writes VAs meanwhile,
    // as integration files run one at a time).
    expect(await apiserverWrites(sb.kc, 'variantautoscalings')).toBe(writesBefore);
    // The time of the last cycle is a metric instead.
    await waitFor('a later wva_last_optimization_timestamp_seconds', 20_000, async () => ((await lastRun()) ?? 0) > Math.max(firstStamp, writesAt / 1000 - 1));
  });
});
