import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoordinationV1Api, RbacAuthorizationV1Api, Watch, type V1Pod } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { realNode, startRealNode } from '../../sandbox/real-node.js';
import { RedisProcess } from '../faults/harness/redis-process.js';
import { createMs, deleteMs, getMs } from '../fixtures/modelserving-fixtures.js';
import { MODEL_SERVER_IMAGE, realNodeMs } from '../fixtures/real-node-ms.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Ripple as its users run it: Ripple's image (built here from infra/deploy/Dockerfile, infra/images/build.sh
// ripple) installed by its Helm chart in the scaled mode, every pod a real container on the sandbox's real node,
// talking to the API server through the `kubernetes` Service with its own ServiceAccount, and to a Redis outside
// the cluster through a Service (a managed Redis, as most platform teams have). The ModelServings it reconciles
// run the test model server on the same node, so their readiness comes from real probes.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, '.cache', 'control-plane', 'bin');
const node = realNode();
const version = z.object({ version: z.string() }).parse(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))).version;
const RELEASE = 'rn';
const MS_WORKER = `${RELEASE}-ripple-worker-reconcile-modelserving`;

let sb: TestSandbox;
let kubeconfig: string;
let work: string;
let redis: RedisProcess;

interface Run { status: number; stdout: string; stderr: string }
function run(cmd: string, args: string[]): Run {
  const env = { ...process.env, HELM_CACHE_HOME: path.join(work, 'cache'), HELM_CONFIG_HOME: path.join(work, 'config'), HELM_DATA_HOME: path.join(work, 'data') };
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}
function ok(r: Run, what: string): string {
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}):\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}
const kubectl = (args: string[]) => run(path.join(bin, 'kubectl'), ['--kubeconfig', kubeconfig, '-n', sb.namespace, ...args]);
const isReady = (pod: V1Pod) => pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
const podsOf = async (component: string) =>
  (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `app.kubernetes.io/component=${component}` })).items.filter(
    (p) => !p.metadata?.deletionTimestamp,
  );

const realMs = (name: string, replicas = 1) => realNodeMs(name, sb.namespace, { replicas });
const running = async (name: string) => {
  const ms = await getMs(sb, name);
  return ms?.status?.phase === 'Ready' && ms.status.availableReplicas === ms.spec.replicas ? ms : undefined;
};

/** Every pod event in the namespace from now on, so a negative check sees all of them, not a sample. */
async function recordPodEvents(): Promise<{ events: { type: string; pod: V1Pod }[]; stop: () => void }> {
  const events: { type: string; pod: V1Pod }[] = [];
  const req = await new Watch(sb.kc).watch(
    `/api/v1/namespaces/${sb.namespace}/pods`,
    {},
    (type: string, pod: V1Pod) => events.push({ type, pod }),
    () => undefined,
  );
  return { events, stop: () => req.abort() };
}

describe('the chart on the real node (scaled mode, Ripple’s own image)', () => {
  beforeAll(async () => {
    const sandboxDir = inject('sandboxDir');
    if (!sandboxDir) throw new Error('the real node runs only in Ripple’s own sandbox (RIPPLE_TEST_KUBECONFIG is set)');
    kubeconfig = inject('kubeconfig');
    work = mkdtempSync(path.join(tmpdir(), 'ripple-real-chart-'));
    // Built once and cached (a second run returns from its stamp); node-up.sh loads it into containerd.
    ok(run('bash', [path.join(root, 'infra', 'images', 'build.sh'), 'ripple']), 'building Ripple’s image');
    await startRealNode(sandboxDir);
    sb = await openSandbox('rn-chart');

    // Redis outside the cluster, reached through a Service without a selector, with a password.
    const password = `pw-${sb.prefix}`;
    redis = await RedisProcess.start(['--bind', `127.0.0.1 ${node.ip}`]);
    const admin = new Redis(redis.url);
    await admin.config('SET', 'requirepass', password); // after start: the harness's readiness PING has no password
    admin.disconnect();
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name: 'redis' }, spec: { ports: [{ name: 'redis', port: 6379, targetPort: redis.port }] } },
    });
    const slice = {
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
      metadata: { name: 'redis-external', labels: { 'kubernetes.io/service-name': 'redis' } },
      addressType: 'IPv4', endpoints: [{ addresses: [node.ip], conditions: { ready: true } }],
      ports: [{ name: 'redis', port: redis.port, protocol: 'TCP' }],
    };
    writeFileSync(path.join(work, 'slice.json'), JSON.stringify(slice));
    ok(kubectl(['apply', '-f', path.join(work, 'slice.json')]), 'the Redis EndpointSlice');

    const values = {
      mode: 'scaled',
      image: { repository: 'ripple.local/ripple', tag: version, pullPolicy: 'Never' },
      config: { watchNamespace: sb.namespace, prefix: sb.prefix.replace(/[^a-z0-9-]/g, '-') },
      redis: { deploy: false, url: `redis://:${password}@redis.${sb.namespace}.svc.cluster.local:6379` },
      opsToken: { value: 'ops-token-for-the-real-node-test' },
      nodeSelector: { 'kubernetes.io/hostname': node.name },
      tolerations: [node.toleration],
      resources: { requests: { cpu: '20m', memory: '64Mi' }, limits: { memory: '512Mi' } },
      watcher: { replicas: 2 },
      ops: { replicas: 1 },
      workers: { replicas: 1 },
    };
    writeFileSync(path.join(work, 'values.json'), JSON.stringify(values));
    const started = Date.now();
    ok(
      run(path.join(bin, 'helm'), ['--kubeconfig', kubeconfig, 'install', RELEASE, path.join(root, 'charts', 'ripple'), '-n', sb.namespace, '-f', path.join(work, 'values.json'), '--wait', '--timeout', '5m']),
      'helm install',
    );
    console.log(`real-node chart: helm install --wait took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 900_000); // a cold image build (a warm one returns from its stamp) and every pod's start on 2 cores
  afterAll(async () => {
    if (work && sb) run(path.join(bin, 'helm'), ['--kubeconfig', kubeconfig, 'uninstall', RELEASE, '-n', sb.namespace, '--wait', '--timeout', '2m']);
    await redis?.stop();
    await sb?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('runs every component as a Ready container of Ripple’s image on the real node, each under its own ServiceAccount', async () => {
    const pods = (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `app.kubernetes.io/instance=${RELEASE}` })).items;
    const components = new Set(pods.map((p) => p.metadata?.labels?.['app.kubernetes.io/component']));
    expect([...components].sort()).toEqual(expect.arrayContaining(['ops', 'watcher', 'worker']));
    expect(pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'watcher')).toHaveLength(2);
    for (const p of pods) {
      expect(p.spec?.nodeName, p.metadata?.name).toBe(node.name);
      expect(isReady(p), `${p.metadata?.name} Ready`).toBe(true);
      expect(p.status?.containerStatuses?.[0]?.image).toContain(`ripple.local/ripple:${version}`);
      expect(p.status?.containerStatuses?.[0]?.containerID).toMatch(/^containerd:\/\//);
    }
    const accounts = new Set(pods.map((p) => p.spec?.serviceAccountName));
    expect(accounts.size).toBeGreaterThanOrEqual(6); // watcher, ops and one per function
  });

  it('converges ModelServings whose pods run on the real node, ready by their real probes', async () => {
    await createMs(sb, realMs('real-a', 2));
    const ms = await waitFor('ModelServing real-a Running with 2 available groups', 120_000, () => running('real-a'));
    expect(ms.status?.availableReplicas).toBe(2);
    const pods = (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: 'modelserving.volcano.sh/name=real-a' })).items;
    expect(pods.length).toBe(2);
    for (const p of pods) {
      expect(p.spec?.nodeName).toBe(node.name);
      expect(p.status?.podIP).toMatch(/^10\.244\.0\./);
    }
  });

  it('refuses a request outside a component’s RBAC with 403', async () => {
    // The modelserving worker's identity, used from a pod as Ripple's own process uses it (mounted token).
    const name = 'as-worker';
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: {
        metadata: { name },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': node.name },
          tolerations: [node.toleration],
          restartPolicy: 'Never',
          serviceAccountName: MS_WORKER,
          containers: [{ name: 'client', image: MODEL_SERVER_IMAGE, imagePullPolicy: 'Never', command: ['/modelserver', 'get', 'https://kubernetes.default.svc/api/v1/namespaces/kube-system/secrets'] }],
        },
      },
    });
    const done = await waitFor('the client pod to finish', 90_000, async () => {
      const p = await sb.core.readNamespacedPod({ name, namespace: sb.namespace });
      return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
    });
    expect(done.status?.containerStatuses?.[0]?.state?.terminated?.message).toMatch(new RegExp(`^403 .*system:serviceaccount:${sb.namespace}:${MS_WORKER}.*cannot list resource`));
    // Ripple's own use of the same identity is allowed: the worker reconciled real-a with it.
    const rbac = sb.kc.makeApiClient(RbacAuthorizationV1Api);
    const bindings = (await rbac.listClusterRoleBinding()).items.filter((b) => b.subjects?.some((s) => s.name === MS_WORKER && s.namespace === sb.namespace));
    expect(bindings.length).toBeGreaterThan(0);
  });

  it('moves the watcher’s leadership to the other pod when the leader’s pod is deleted, and keeps reconciling', async () => {
    const leases = sb.kc.makeApiClient(CoordinationV1Api);
    const watchers = await podsOf('watcher');
    const names = watchers.map((p) => p.metadata?.name ?? '');
    const holderOf = async () => {
      const list = (await leases.listNamespacedLease({ namespace: sb.namespace })).items;
      return list.map((l) => l.spec?.holderIdentity ?? '').find((h) => names.some((n) => h.startsWith(n)));
    };
    const leader = await waitFor('a watcher pod to hold the Lease', 60_000, holderOf);
    const leaderPod = names.find((n) => leader.startsWith(n));
    const follower = names.find((n) => n !== leaderPod);
    expect(leaderPod).toBeDefined();
    const started = Date.now();
    await sb.core.deleteNamespacedPod({ name: leaderPod ?? '', namespace: sb.namespace });
    await waitFor('the other watcher to take the Lease', 60_000, async () => ((await holderOf())?.startsWith(follower ?? '?') ? true : undefined));
    const takeover = Date.now() - started;
    await createMs(sb, realMs('after-takeover'));
    await waitFor('after-takeover Running under the new leader', 120_000, () => running('after-takeover'));
    const reconciled = Date.now() - started;
    console.log(`real-node chart: watcher takeover ${(takeover / 1000).toFixed(1)} s after the leader's pod was deleted; a new ModelServing Running ${(reconciled / 1000).toFixed(1)} s after`);
    expect(takeover).toBeLessThan(30_000);
  });

  it('loses nothing and deletes nothing when the modelserving worker’s container is SIGKILLed mid-storm', async () => {
    const watch = await recordPodEvents();
    const names = Array.from({ length: 12 }, (_, i) => `storm-${i}`);
    for (const n of names) await createMs(sb, realMs(n));
    const [worker] = await podsOf('worker').then((ps) => ps.filter((p) => p.metadata?.name?.startsWith(MS_WORKER)));
    const id = worker?.status?.containerStatuses?.[0]?.containerID?.replace('containerd://', '');
    expect(id).toBeTruthy();
    const killed = spawnSync('ctr', ['--address', path.join(inject('sandboxDir'), 'node', 'containerd.sock'), '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id ?? ''], { encoding: 'utf8' });
    expect(killed.status, killed.stderr).toBe(0);
    for (const n of names) await waitFor(`${n} Running after the worker was killed`, 180_000, () => running(n));
    const restarted = await sb.core.readNamespacedPod({ name: worker?.metadata?.name ?? '', namespace: sb.namespace });
    expect(restarted.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode).toBe(137);
    watch.stop();
    // Scale-ups only: a second writer or a replayed stale plan would show as a deleted or re-created pod.
    const stormPods = watch.events.filter((e) => e.pod.metadata?.labels?.['modelserving.volcano.sh/name']?.startsWith('storm-'));
    expect(stormPods.filter((e) => e.type === 'DELETED').map((e) => e.pod.metadata?.name)).toEqual([]);
    const uids = new Map<string, Set<string>>();
    for (const e of stormPods) {
      const n = e.pod.metadata?.name ?? '';
      uids.set(n, (uids.get(n) ?? new Set()).add(e.pod.metadata?.uid ?? ''));
    }
    expect(uids.size).toBe(names.length);
    expect([...uids.values()].filter((s) => s.size > 1)).toEqual([]);
    // The real node holds a bounded number of pods: free them for the next test.
    for (const n of names) await deleteMs(sb, n);
  }, 300_000);

  it('rolls the workers without losing work, each old pod draining on SIGTERM and exiting 0', async () => {
    const watch = await recordPodEvents();
    const names = Array.from({ length: 8 }, (_, i) => `roll-${i}`);
    for (const n of names.slice(0, 4)) await createMs(sb, realMs(n));
    const before = new Set((await podsOf('worker')).map((p) => p.metadata?.name));
    ok(kubectl(['rollout', 'restart', `deployment/${MS_WORKER}`]), 'rollout restart');
    for (const n of names.slice(4)) await createMs(sb, realMs(n));
    const rolling = Date.now();
    ok(kubectl(['rollout', 'status', `deployment/${MS_WORKER}`, '--timeout=180s']), 'rollout status');
    console.log(`real-node chart: the worker's rolling restart finished in ${((Date.now() - rolling) / 1000).toFixed(1)} s`);
    for (const n of names) await waitFor(`${n} Running across the rolling restart`, 180_000, () => running(n));
    watch.stop();
    const old = watch.events.filter((e) => before.has(e.pod.metadata?.name) && e.pod.metadata?.name?.startsWith(MS_WORKER));
    const exits = old.flatMap((e) => e.pod.status?.containerStatuses?.map((s) => s.state?.terminated?.exitCode) ?? []).filter((c) => c !== undefined);
    expect(exits.length).toBeGreaterThan(0);
    expect(new Set(exits)).toEqual(new Set([0]));
  }, 300_000);
});
