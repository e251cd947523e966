import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startKeda, type RunningKeda } from '../../sandbox/keda.js';
import { createMs, msManifest } from '../fixtures/modelserving-fixtures.js';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.js';
import { RippleRelease } from '../harness/ripple-release.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The chart's ScaledObject moving real worker pods: KEDA (built from the Go module proxy, sandbox/keda.ts) reads
// the modelserving queue's depth from a real Prometheus that scrapes the ops pod on the real node, and scales the
// worker Deployment from 1 to 3 real containers under a storm, and back to 1 once the queue has drained.
describe('KEDA scales the chart’s worker Deployment on the real node', () => {
  let sb: TestSandbox;
  let release: RippleRelease;
  let prometheus: RunningPrometheus;
  let keda: RunningKeda;
  let worker: string;
  const apps = () => sb.kc.makeApiClient(AppsV1Api);
  const readyReplicas = async () => (await apps().readNamespacedDeployment({ name: worker, namespace: sb.namespace })).status?.readyReplicas ?? 0;

  beforeAll(async () => {
    sb = await openSandbox('rn-keda');
    release = await RippleRelease.prepare(sb, 'rk');
    worker = release.object('worker-reconcile-modelserving');
    // One reconcile at a time per worker, so a storm is a queue a single pod cannot keep empty.
    const base = {
      watcher: { replicas: 1 },
      ops: { replicas: 1 },
      workers: { replicas: 1, perFunction: { 'reconcile-modelserving': { extraEnv: [{ name: 'MODELSERVING_CONCURRENCY', value: '1' }] } } },
    };
    release.install(base);
    const ops = (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: 'app.kubernetes.io/component=ops' })).items;
    // The host reaches pod IPs on the node's bridge: Prometheus scrapes the ops pod as a PodMonitor would.
    prometheus = await startPrometheus({ targets: [], rippleTargets: ops.map((p) => `${p.status?.podIP}:8081`) });
    await prometheus.waitForTargetsUp(60_000);
    keda = await startKeda({ kubeconfig: inject('kubeconfig'), watchNamespaces: [sb.namespace] });
    release.install({
      ...base,
      keda: { enabled: true, prometheusAddress: prometheus.url, minReplicas: 1, maxReplicas: 3, threshold: 4, pollingInterval: 2, cooldownPeriod: 20 },
    });
  }, 900_000);
  afterAll(async () => {
    await release?.uninstall();
    await keda?.stop();
    await prometheus?.stop();
    await sb?.cleanup();
  });

  it('scales out to 3 real worker pods under a storm and back to 1 after the queue drains', async () => {
    expect(await readyReplicas()).toBe(1);
    const started = Date.now();
    const names = Array.from({ length: 200 }, (_, i) => `k-${i}`);
    // Replicas 0: every reconcile is real work for the worker (status, revisions), and no pod is created.
    await Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        for (let i = lane; i < names.length; i += 8) await createMs(sb, msManifest(names[i] ?? '', sb.namespace, { replicas: 0 }));
      }),
    );
    await waitFor('KEDA to scale the worker Deployment to 3 ready pods', 240_000, async () => ((await readyReplicas()) >= 3 ? true : undefined), 500);
    const out = Date.now() - started;
    const pods = (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: 'app.kubernetes.io/component=worker' })).items.filter((p) =>
      p.metadata?.name?.startsWith(worker),
    );
    expect(pods.filter((p) => p.spec?.nodeName === 'ripple-real-node' && p.status?.containerStatuses?.[0]?.ready).length).toBeGreaterThanOrEqual(3);
    const drained = await waitFor('the queue to drain', 300_000, async () => {
      const body = await prometheus.query('sum(max by (state) (bullmq_job_count{queue="reconcile-modelserving",state=~"waiting|prioritized|active"}))');
      const value = JSON.stringify(body).match(/"value":\[[^,]+,"([^"]+)"\]/)?.[1];
      return value === '0' ? Date.now() : undefined;
    }, 1_000);
    await waitFor('KEDA to scale the workers back to 1', 300_000, async () => ((await readyReplicas()) === 1 && (await apps().readNamespacedDeployment({ name: worker, namespace: sb.namespace })).spec?.replicas === 1 ? true : undefined), 1_000);
    const inTime = Date.now() - drained;
    console.log(`real-node KEDA: 1 → 3 ready worker pods ${(out / 1000).toFixed(1)} s after the storm began; back to 1 ${(inTime / 1000).toFixed(1)} s after the queue drained (cooldown 20 s)`);
  }, 900_000);
});
