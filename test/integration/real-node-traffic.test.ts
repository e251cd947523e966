import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient, withLifecycle, type OperationAdapter, type PodRef } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { readPod } from '../../functions/ops-lifecycle/pod-access/pod-api.js';
import { SERVICE_COOPERATION_LABEL } from '../../functions/ops-lifecycle/service-cooperator/plan.js';
import { realNode } from '../../sandbox/real-node.js';
import { cleanupWithoutFinalizers, conditionOf, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { waitRouted } from '../fixtures/ops-lifecycle-traffic.js';
import { MODEL_SERVER_IMAGE } from '../fixtures/real-node-ms.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { useRealNode } from '../harness/real-node.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

/** One pod after another: replaced (deleted and created again), or updated (its container exits and restarts). */
const PLAN = [
  { index: 0, op: 'replace' },
  { index: 1, op: 'update' },
  { index: 2, op: 'replace' },
] as const;
// How long each client sends: longer than the operations take (checked: the client is still running after them).
const LOAD_SECONDS = 40;

// Seed 001's promise, measured: a client on the real node sends requests without pause through a Service (real
// kube-proxy rules, CoreDNS) while its three model-server pods are replaced and updated one after another. Through
// PodOpsLifecycle with the Service cooperator no request fails; the same operations on pods that are not opted in
// fail requests, so the test can fail.
describe('seed 001 on the real node: requests through a Service while its pods are operated', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  beforeAll(async () => {
    await useRealNode();
    sb = await openSandbox('rn-traffic');
    ripple = await startRipple(sb, [definition({})], { env: { OPS_LIFECYCLE_SERVICE_COOPERATION: 'true' } });
  });
  afterAll(async () => {
    await ripple?.stop();
    await cleanupWithoutFinalizers(sb);
  });

  const node = () => realNode();
  const onRealNode = () => ({
    nodeSelector: { 'kubernetes.io/hostname': node().name },
    tolerations: [node().toleration],
    terminationGracePeriodSeconds: 1,
  });
  const serverPod = (name: string, app: string): V1Pod => ({
    metadata: { name, labels: { app } },
    spec: {
      ...onRealNode(),
      containers: [{
        name: 'model',
        image: MODEL_SERVER_IMAGE,
        imagePullPolicy: 'Never',
        ports: [{ containerPort: 8080 }],
        readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
        resources: { requests: { cpu: '5m', memory: '8Mi' } },
      }],
    },
  });
  const createServer = async (name: string, app: string, lifecycle: boolean) => {
    const pod = serverPod(name, app);
    await sb.core.createNamespacedPod({ namespace: sb.namespace, body: lifecycle ? withLifecycle(pod) : pod });
  };
  const createService = async (app: string, cooperate: boolean) => {
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: {
        metadata: { name: app, labels: cooperate ? { [SERVICE_COOPERATION_LABEL]: 'true' } : {} },
        spec: { selector: { app }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
  };
  const startClient = async (app: string) => {
    const name = `client-${app}`;
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: {
        metadata: { name },
        spec: {
          ...onRealNode(),
          restartPolicy: 'Never',
          containers: [{
            name: 'client',
            image: MODEL_SERVER_IMAGE,
            imagePullPolicy: 'Never',
            args: ['load', `http://${app}.${sb.namespace}.svc.cluster.local/`, String(LOAD_SECONDS)],
            resources: { requests: { cpu: '5m', memory: '8Mi' } },
          }],
        },
      },
    });
    await waitFor(`${name} running`, 60_000, async () => (await readPod(sb.kc, { namespace: sb.namespace, name }))?.status?.phase === 'Running' || undefined);
    return name;
  };
  /** The client's count, from its container's terminated state (the kubelet copies /dev/termination-log there). */
  const countOf = async (client: string) => {
    const message = await waitFor(`${client} to finish`, (LOAD_SECONDS + 60) * 1000, async () => {
      const p = await sb.core.readNamespacedPod({ namespace: sb.namespace, name: client });
      return p.status?.containerStatuses?.[0]?.state?.terminated?.message;
    }, 500);
    const m = /ok=(\d+) failed=(\d+)/.exec(message);
    if (!m) throw new Error(`${client}: no count in its termination message: ${message}`);
    return { ok: Number(m[1]), failed: Number(m[2]), message };
  };
  const stillRunning = async (client: string) =>
    (await sb.core.readNamespacedPod({ namespace: sb.namespace, name: client })).status?.containerStatuses?.[0]?.state?.running !== undefined;

  const read = async (ref: PodRef) => {
    const pod = await readPod(sb.kc, ref);
    if (!pod) throw new Error(`${ref.name} is gone`);
    return pod;
  };
  const full = (ref: PodRef) => sb.core.readNamespacedPod({ ...ref });
  const restarts = async (ref: PodRef) => (await full(ref)).status?.containerStatuses?.[0]?.restartCount ?? 0;
  /** The real operation. update: the container exits and the kubelet restarts it (what an in-place update does). */
  const operate = async (ref: PodRef, op: 'replace' | 'update', app: string, lifecycle: boolean) => {
    if (op === 'update') {
      const before = await restarts(ref);
      const answer = await fetch(`http://${(await full(ref)).status?.podIP}:8080/exit?code=0`);
      expect(await answer.text()).toContain('exiting with 0');
      await waitFor(`${ref.name} restarted`, 30_000, async () => (await restarts(ref)) > before || undefined, 200);
      return;
    }
    const uid = (await read(ref)).metadata.uid;
    await sb.core.deleteNamespacedPod({ ...ref });
    await waitFor(`${ref.name} gone`, 60_000, async () => (await readPod(sb.kc, ref))?.metadata.uid !== uid || undefined, 200);
    await createServer(ref.name, app, lifecycle);
  };
  const readyBare = async (ref: PodRef) =>
    waitFor(`${ref.name} Ready`, 60_000, async () => {
      const pod = await readPod(sb.kc, ref);
      return pod && conditionOf(pod, 'Ready') === 'True' ? pod : undefined;
    }, 200);

  it('through the lifecycle no request fails; the same operations without it fail requests', async () => {
    const lc = ['lc-0', 'lc-1', 'lc-2'];
    const bare = ['bare-0', 'bare-1', 'bare-2'];
    await createService('lc', true);
    await createService('bare', false);
    for (const name of lc) await createServer(name, 'lc', true);
    for (const name of bare) await createServer(name, 'bare', false);
    for (const name of lc) await waitServing(sb, { namespace: sb.namespace, name }, 120_000);
    for (const name of bare) await readyBare({ namespace: sb.namespace, name });
    await waitRouted(sb, 'lc', lc, 60_000);
    await waitRouted(sb, 'bare', bare, 60_000);

    // Through the lifecycle: begin, wait for the grant (traffic is off: gate False, Ready False, out of every
    // EndpointSlice, the cooperator's finalizer released), operate for real, finish, wait until it serves again.
    const ops = operationClient({ kc: sb.kc });
    const withClient = await startClient('lc');
    const started = Date.now();
    for (const { index, op } of PLAN) {
      const ref = { namespace: sb.namespace, name: lc[index] ?? '' };
      const adapter: OperationAdapter = { id: `${op}-${index}`, type: op, allowMultiType: true };
      await ops.begin(ref, adapter);
      await waitFor(`${ref.name}: operate granted`, 60_000, async () => (await ops.allowOps(ref, adapter)).allowed || undefined, 50);
      await operate(ref, op, 'lc', true);
      // A replaced pod is a new pod with no lifecycle of its own to finish.
      if (op === 'update') await ops.finish(ref, adapter);
      await waitServing(sb, ref, 60_000);
      await waitRouted(sb, 'lc', lc, 60_000);
    }
    const withTook = Date.now() - started;
    expect(await stillRunning(withClient), `the operations took ${withTook} ms, longer than the client's ${LOAD_SECONDS} s`).toBe(true);

    // Without: the same operations, one pod after another, on pods that are not opted in.
    const withoutClient = await startClient('bare');
    for (const { index, op } of PLAN) {
      const ref = { namespace: sb.namespace, name: bare[index] ?? '' };
      await operate(ref, op, 'bare', false);
      await readyBare(ref);
      await waitRouted(sb, 'bare', bare, 60_000);
    }
    expect(await stillRunning(withoutClient)).toBe(true);

    const withLc = await countOf(withClient);
    const without = await countOf(withoutClient);
    console.log(`real-node traffic: with the lifecycle ${withLc.message} (operations took ${withTook} ms); without it ${without.message}`);
    expect(withLc.ok).toBeGreaterThan(0);
    expect(withLc.failed, withLc.message).toBe(0);
    expect(without.failed, without.message).toBeGreaterThan(0);
  }, 400_000);
});
