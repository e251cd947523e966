import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { CoordinationV1Api, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { realNode } from '../../sandbox/real-node.js';
import { createMs, deleteMs, getMs, isReady } from '../fixtures/modelserving-fixtures.js';
import { MODEL_SERVER_IMAGE, realNodeMs } from '../fixtures/real-node-ms.js';
import { ok, RIPPLE_VERSION, RippleRelease } from '../harness/ripple-release.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { watchEvents } from '../harness/watch-events.js';

// Ripple as its users run it (test/harness/ripple-release.ts): its image installed by its Helm chart in the
// scaled mode, every pod a real container on the sandbox's real node. The ModelServings it reconciles run the
// test model server on the same node, so their readiness comes from real probes.
const node = realNode();

let sb: TestSandbox;
let release: RippleRelease;
let MS_WORKER: string;

const kubectl = (args: string[]) => release.kubectl(args);
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
  const req = await watchEvents(sb.kc, `/api/v1/namespaces/${sb.namespace}/pods`, {}, (type: string, pod: V1Pod) => events.push({ type, pod }));
  return { events, stop: () => req.abort() };
}

/** Every container exit containerd reports from now on (`ctr events`, topic /tasks/exit), by container ID. */
function containerExits(): { seen: { container: string; status: number }[]; stop(): void } {
  const seen: { container: string; status: number }[] = [];
  const child = spawn('ctr', ['--address', path.join(inject('sandboxDir'), 'node', 'containerd.sock'), '-n', 'k8s.io', 'events'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const exit = z.object({ container_id: z.string(), id: z.string(), exit_status: z.number().optional() });
  let buffered = '';
  child.stdout.on('data', (b: Buffer) => {
    buffered += b.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes(' /tasks/exit ')) continue;
      const e = exit.safeParse(JSON.parse(line.slice(line.indexOf('{'))));
      // The task's own exit (id = container id), not an exec's inside it; a missing status is 0 (protobuf default).
      if (e.success && e.data.id === e.data.container_id) seen.push({ container: e.data.container_id, status: e.data.exit_status ?? 0 });
    }
  });
  return { seen, stop: () => child.kill() };
}

describe('the chart on the real node (scaled mode, Ripple’s own image)', () => {
  beforeAll(async () => {
    sb = await openSandbox('rn-chart');
    release = await RippleRelease.prepare(sb, 'rn');
    MS_WORKER = release.object('worker-reconcile-modelserving');
    const took = release.install({ watcher: { replicas: 2 }, ops: { replicas: 1 }, workers: { replicas: 1 } });
    console.log(`real-node chart: helm install --wait took ${(took / 1000).toFixed(1)} s`);
  }, 900_000); // a cold image build (a warm one returns from its stamp) and every pod's start on 2 cores
  afterAll(async () => {
    await release?.uninstall();
    await sb?.cleanup();
  });

  it('runs every component as a Ready container of Ripple’s image on the real node, each under its own ServiceAccount', async () => {
    const pods = (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `app.kubernetes.io/instance=${release.name}` })).items;
    const components = new Set(pods.map((p) => p.metadata?.labels?.['app.kubernetes.io/component']));
    expect([...components].sort()).toEqual(expect.arrayContaining(['ops', 'watcher', 'worker']));
    expect(pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'watcher')).toHaveLength(2);
    for (const p of pods) {
      expect(p.spec?.nodeName, p.metadata?.name).toBe(node.name);
      expect(isReady(p), `${p.metadata?.name} Ready`).toBe(true);
      expect(p.status?.containerStatuses?.[0]?.image).toContain(`ripple.local/ripple:${RIPPLE_VERSION}`);
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

  it('moves the watcher’s leadership to another watcher pod when the leader’s pod is deleted, and keeps reconciling', async () => {
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
    // Usually the follower, at once (the leader releases the Lease on SIGTERM); should the release not land, the
    // Lease expires (15 s) and the follower or the leader's replacement takes it. Either is a takeover.
    const holderAmong = async () => {
      const now = (await podsOf('watcher')).map((p) => p.metadata?.name ?? '').filter((n) => n && n !== leaderPod);
      const list = (await leases.listNamespacedLease({ namespace: sb.namespace })).items;
      return list.map((l) => l.spec?.holderIdentity ?? '').find((h) => now.some((n) => h.startsWith(n)));
    };
    let newHolder: string;
    try {
      newHolder = await waitFor('another watcher to take the Lease', 60_000, holderAmong);
    } catch (err) {
      // What a person needs to tell a stuck elector from a lost release: the Lease and each watcher's last lines.
      const lease = kubectl(['get', 'leases', '-o', 'yaml']).stdout;
      const logs = (await podsOf('watcher')).map((p) => `--- ${p.metadata?.name}\n${kubectl(['logs', p.metadata?.name ?? '', '--tail', '15']).stdout}`).join('\n');
      throw new Error(`${String(err)}\nLeases:\n${lease}\nwatcher logs:\n${logs}`, { cause: err });
    }
    const takeover = Date.now() - started;
    console.log(`real-node chart: the Lease went to ${newHolder.startsWith(follower ?? '?') ? 'the follower' : "the leader's replacement"} (${newHolder})`);
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
    const names = Array.from({ length: 8 }, (_, i) => `roll-${i}`);
    for (const n of names.slice(0, 4)) await createMs(sb, realMs(n));
    const old = (await podsOf('worker')).filter((p) => p.metadata?.name?.startsWith(MS_WORKER));
    const oldContainers = new Set(old.map((p) => p.status?.containerStatuses?.[0]?.containerID?.replace('containerd://', '') ?? ''));
    // The runtime's own record of each exit: the pod may be gone before the kubelet writes its final status.
    const exits = containerExits();
    ok(kubectl(['rollout', 'restart', `deployment/${MS_WORKER}`]), 'rollout restart');
    for (const n of names.slice(4)) await createMs(sb, realMs(n));
    const rolling = Date.now();
    ok(kubectl(['rollout', 'status', `deployment/${MS_WORKER}`, '--timeout=180s']), 'rollout status');
    console.log(`real-node chart: the worker's rolling restart finished in ${((Date.now() - rolling) / 1000).toFixed(1)} s`);
    for (const n of names) await waitFor(`${n} Running across the rolling restart`, 180_000, () => running(n));
    const seen = await waitFor('the old worker containers’ exits', 30_000, async () => {
      const mine = exits.seen.filter((e) => oldContainers.has(e.container));
      return mine.length === oldContainers.size ? mine : undefined;
    });
    exits.stop();
    expect(seen.map((e) => e.status)).toEqual([...oldContainers].map(() => 0));
  }, 300_000);
});
