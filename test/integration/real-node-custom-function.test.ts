import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { realNode } from '../../sandbox/real-node.js';
import { isReady } from '../fixtures/modelserving-fixtures.js';
import { ok, RIPPLE_VERSION, RippleRelease } from '../harness/ripple-release.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Issue 32, "Functions without a fork", shipped the way a platform team ships it: examples/configmap-stamp's
// Dockerfile (FROM Ripple's image, the compiled module copied under /app; built here by infra/images/build.sh
// configmap-stamp, without a daemon) installed by Ripple's chart with the example's own values.yaml for
// extraFunctions (its module path and the RBAC docs/writing-a-function.md says to add), every pod a container of
// that image on the sandbox's real node. First scaled (the function's own worker Deployment), then serverless on
// plain Kubernetes (a function pod running `ripple serve` behind its Service, called by the dispatcher).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const IMAGE = 'ripple.local/ripple-configmap-stamp';
const FN = 'configmap-stamp';
const STAMP = 'example.ripple.dev/stamp';
const node = realNode();
/** The example's values file exactly as its README has users pass it (`-f examples/configmap-stamp/values.yaml`). */
const exampleValues = z.object({ extraFunctions: z.array(z.object({ name: z.string(), module: z.string() }).passthrough()) }).passthrough()
  .parse(parse(readFileSync(path.join(root, 'examples', 'configmap-stamp', 'values.yaml'), 'utf8')));

let sb: TestSandbox;
let release: RippleRelease;

const podsOf = async (selector: string) =>
  (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `app.kubernetes.io/instance=${release.name},${selector}` })).items.filter((p) => !p.metadata?.deletionTimestamp);

async function stamped(name: string): Promise<string | undefined> {
  const cm = await sb.core.readNamespacedConfigMap({ namespace: sb.namespace, name });
  return cm.metadata?.annotations?.[STAMP];
}

async function createLabelled(name: string): Promise<void> {
  await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name, labels: { [STAMP]: 'true' } }, data: { at: name } } });
}

/** `kubectl auth can-i VERB RESOURCE` as one of the release's ServiceAccounts: the API server's own answer (a SubjectAccessReview). */
function can(serviceAccount: string, verb: string, resource: string): boolean {
  return release.kubectl(['auth', 'can-i', verb, resource, `--as=system:serviceaccount:${sb.namespace}:${serviceAccount}`]).stdout.trim() === 'yes';
}

describe('a function of your own in an image built FROM Ripple’s, installed by the chart on the real node', () => {
  beforeAll(async () => {
    sb = await openSandbox('rn-customfn');
    const started = Date.now();
    release = await RippleRelease.prepare(sb, 'cf', undefined, ['ripple', 'configmap-stamp']);
    console.log(`real-node custom function: images and node ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 600_000); // a cold build of Ripple's image, then the function's one layer on it
  afterAll(async () => {
    await release?.uninstall();
    await sb?.cleanup();
  });

  it('scaled: its worker, in the user’s image under its own ServiceAccount with the documented RBAC, stamps a labelled ConfigMap and records the Event', async () => {
    const took = release.install({
      ...exampleValues,
      image: { repository: IMAGE, tag: RIPPLE_VERSION, pullPolicy: 'Never' },
      watcher: { replicas: 1 },
      ops: { replicas: 1 },
      // Lean: only the workers this needs, the function's own and emit-events (its Events go through it).
      workers: { replicas: 0, perFunction: { [FN]: { replicas: 1 }, 'emit-events': { replicas: 1 } } },
    });
    console.log(`real-node custom function: helm install (scaled) --wait took ${(took / 1000).toFixed(1)} s`);
    // Every process loads the module (the watcher to watch for it, ops to resync it): each runs the user's image.
    const pods = await podsOf('app.kubernetes.io/component in (watcher,ops,worker)');
    expect(pods.map((p) => p.metadata?.labels?.['app.kubernetes.io/component']).sort()).toEqual(['ops', 'watcher', 'worker', 'worker']);
    for (const p of pods) {
      expect(p.spec?.nodeName, p.metadata?.name).toBe(node.name);
      expect(isReady(p), `${p.metadata?.name} Ready`).toBe(true);
      expect(p.status?.containerStatuses?.[0]?.image, p.metadata?.name).toBe(`${IMAGE}:${RIPPLE_VERSION}`);
    }
    const worker = await podsOf(`app.kubernetes.io/component=worker,ripple.dev/function=${FN}`);
    const account = release.object(`worker-${FN}`);
    expect(worker.map((p) => p.spec?.serviceAccountName)).toEqual([account]);
    // values.yaml's rules, nothing more: its handler reads and patches ConfigMaps, its resync lists them.
    expect([can(account, 'get', 'configmaps'), can(account, 'patch', 'configmaps'), can(account, 'list', 'configmaps')]).toEqual([true, true, true]);
    expect([can(account, 'delete', 'configmaps'), can(account, 'list', 'secrets')]).toEqual([false, false]);
    expect(can(release.object('watcher'), 'watch', 'configmaps')).toBe(true); // its watchRules

    const created = Date.now();
    await createLabelled('scaled');
    const stamp = await waitFor('the worker in the user’s image to stamp ConfigMap scaled', 60_000, () => stamped('scaled'), 250);
    expect(stamp).toMatch(/^sha256:[0-9a-f]{16}$/);
    const events = await waitFor('the Stamped Event on scaled', 60_000, async () => {
      const list = await sb.core.listNamespacedEvent({ namespace: sb.namespace, fieldSelector: 'involvedObject.name=scaled,reason=Stamped' });
      return list.items.length ? list.items : undefined;
    }, 250);
    expect(events.map((e) => e.message)).toEqual([`data stamped ${stamp}`]);
    console.log(`real-node custom function: stamped ${((Date.now() - created) / 1000).toFixed(1)} s after the create (scaled)`);
  }, 420_000);

  it('serverless: its function pod, in the user’s image, behind its Service, reconciles what the dispatcher sends it', async () => {
    // The chart's ScaledObjects need KEDA's CRDs; no KEDA runs here, so the test scales the function up itself
    // (real-node-serverless.test.ts shows KEDA doing it on the queue).
    ok(release.kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(root, '.cache', 'control-plane', 'bin', 'keda-crds')]), 'applying KEDA’s CRDs');
    const took = release.install({
      ...exampleValues,
      image: { repository: IMAGE, tag: RIPPLE_VERSION, pullPolicy: 'Never' },
      mode: 'serverless',
      functionToken: { value: 'function-token-for-the-custom-function-test' },
      watcher: { replicas: 1 },
      ops: { replicas: 1 },
      serverless: { platform: 'kubernetes', dispatcher: { replicas: 1 }, functions: { minScale: 0 } },
    });
    console.log(`real-node custom function: helm upgrade (serverless) --wait took ${(took / 1000).toFixed(1)} s`);
    const fnDeployment = release.object(FN);
    ok(release.kubectl(['scale', `deployment/${fnDeployment}`, '--replicas=1']), `kubectl scale ${fnDeployment}`);
    const [pod] = await waitFor(`a Ready pod of ${fnDeployment}`, 120_000, async () => {
      const ps = (await podsOf(`app.kubernetes.io/component=function,ripple.dev/function=${FN}`)).filter(isReady);
      return ps.length ? ps : undefined;
    }, 500);
    expect(pod?.status?.containerStatuses?.[0]?.image).toBe(`${IMAGE}:${RIPPLE_VERSION}`);
    expect(pod?.spec?.serviceAccountName).toBe(release.object(`worker-${FN}`));
    expect(pod?.spec?.containers[0]?.args).toEqual(['serve', '--function', FN]);
    expect(await podsOf('app.kubernetes.io/component=worker')).toEqual([]); // no worker runs it now

    const created = Date.now();
    await createLabelled('serverless');
    const stamp = await waitFor('the function pod to stamp ConfigMap serverless', 60_000, () => stamped('serverless'), 250);
    expect(stamp).toMatch(/^sha256:[0-9a-f]{16}$/);
    // It was that pod, over HTTP: its own counter of the dispatcher's calls (the node's pod IPs route from here).
    const metrics = await (await fetch(`http://${pod?.status?.podIP}:8081/metrics`)).text();
    expect(metrics).toMatch(/ripple_http_function_requests_total\{function="configmap-stamp",status="success"\} [1-9]/);
    console.log(`real-node custom function: stamped ${((Date.now() - created) / 1000).toFixed(1)} s after the create (serverless)`);
  }, 420_000);
});
