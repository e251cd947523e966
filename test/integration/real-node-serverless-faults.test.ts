import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, type V1Pod } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isReady } from '../fixtures/modelserving-fixtures.js';
import { FAULT_FUNCTION } from '../fixtures/serverless-fault-function.js';
import { faultFunctionValues, FaultFunctionCase, type FaultFunctionReport } from '../harness/fault-function.js';
import { ok, RippleRelease } from '../harness/ripple-release.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Issue 29, item 2, "the guarantees hold over HTTP": Ripple's image installed by its chart in the serverless mode
// on Kubernetes alone (each function a Deployment running `ripple serve` behind a Service, the dispatcher calling
// it), on the real node, with faults a cluster really has: a function container SIGKILLed mid-request, a function
// container's processes SIGSTOPped on the host past its key lease, the dispatcher's container killed mid-storm, the
// function's Deployment scaled to zero while a request is in flight. The function (test/fixtures/
// serverless-fault-function.ts, mounted into every Ripple pod) makes real effects — a handler state write on Redis
// and an API write — and the fencing checker of issue 28 (test/faults/checker.ts) judges them by the servers'
// order: no two reconciles of a key with overlapping [start, end], no stale effect landed after a newer holder
// read, and nothing lost (every key's last accepted reconcile read its final version). Every write to the effect
// ConfigMaps is seen through a watch from their creation, every state write and read in Redis's own order list.
//
// RIPPLE_FAULTS_SERVERLESS_BREAK=unfenced runs the function without the fenced HTTP mode (its handler writes
// with the raw client and commits whatever its claim says): the paused case must then fail. The breaks each other
// case was seen failing on (docs/operations.md, "Serverless on Kubernetes": what each case catches) change the
// image or the chart, so they are not switches here.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const unfenced = process.env.RIPPLE_FAULTS_SERVERLESS_BREAK === 'unfenced';
const DISPATCH_TIMEOUT_MS = 6_000;

let sb: TestSandbox;
let release: RippleRelease;
let redis: Redis;
let prefix: string;
let moduleDir: string;
let fnDeployment: string;
let dispatcherDeployment: string;
const apps = () => sb.kc.makeApiClient(AppsV1Api);
const ctr = (args: string[]) => {
  const r = spawnSync('ctr', ['--address', path.join(inject('sandboxDir'), 'node', 'containerd.sock'), '-n', 'k8s.io', ...args], { encoding: 'utf8' });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
};

const podsOf = async (deployment: string) =>
  (await sb.core.listNamespacedPod({ namespace: sb.namespace })).items.filter(
    (p) => p.metadata?.name?.startsWith(`${deployment}-`) && !p.metadata.deletionTimestamp && p.metadata.ownerReferences?.some((o) => o.kind === 'ReplicaSet'),
  );
const containerId = (p: V1Pod) => p.status?.containerStatuses?.[0]?.containerID?.replace('containerd://', '') ?? '';

async function scale(deployment: string, replicas: number, ready = replicas): Promise<void> {
  ok(release.kubectl(['scale', `deployment/${deployment}`, `--replicas=${replicas}`]), `kubectl scale ${deployment}`);
  await waitFor(`${deployment} at ${ready} ready pods`, 120_000, async () => {
    const pods = await podsOf(deployment);
    return pods.length === ready && pods.every((p) => isReady(p)) ? true : undefined;
  });
}

/** The host PIDs of a container's processes (runc runs them as host processes), from containerd. */
function hostPids(container: string): number[] {
  const out = ok(ctr(['tasks', 'ps', container]), `ctr tasks ps ${container}`);
  return out
    .split('\n')
    .slice(1)
    .map((l) => Number(l.trim().split(/\s+/)[0]))
    .filter((n) => Number.isInteger(n) && n > 0);
}

function expectClean(report: FaultFunctionReport): void {
  console.log(`serverless faults: ${JSON.stringify(report)}`);
  expect({ overlaps: report.overlaps, tokenOrder: report.tokenOrder, lost: report.lost, staleLanded: report.staleLanded, leaked: report.leaked, violations: report.violations }).toEqual({
    overlaps: 0,
    tokenOrder: 0,
    lost: 0,
    staleLanded: 0,
    leaked: 0,
    violations: [],
  });
  expect(report.effects).toBeGreaterThan(0);
}

describe('serverless on Kubernetes on the real node: the guarantees hold over HTTP', () => {
  const cases: FaultFunctionCase[] = [];
  const started = async (label: string, keys: number) => {
    const c = new FaultFunctionCase(sb, redis, prefix, label, keys);
    cases.push(c);
    return c.start();
  };

  beforeAll(async () => {
    sb = await openSandbox('rn-sls-faults');
    release = await RippleRelease.prepare(sb, 'rsf');
    prefix = sb.prefix.replace(/[^a-z0-9-]/g, '-');
    redis = new Redis(release.redis.port, '127.0.0.1', { password: release.redisPassword, maxRetriesPerRequest: null });
    moduleDir = mkdtempSync(path.join(tmpdir(), 'ripple-serverless-faults-'));
    fnDeployment = release.object(FAULT_FUNCTION);
    dispatcherDeployment = release.object('dispatcher');
    // The chart's ScaledObjects need KEDA's CRDs; no KEDA runs here: the cases move the function's replicas themselves.
    ok(release.kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(root, '.cache', 'control-plane', 'bin', 'keda-crds')]), 'applying KEDA’s CRDs');
    const took = release.install({
      mode: 'serverless',
      functionToken: { value: 'function-token-for-the-real-node-0123456789' },
      serverless: { platform: 'kubernetes', dispatcher: { replicas: 1, timeoutMs: DISPATCH_TIMEOUT_MS }, functions: { minScale: 0 } },
      watcher: { replicas: 1 },
      ops: { replicas: 1 },
      ...faultFunctionValues(moduleDir),
      extraEnv: unfenced ? [{ name: 'FAULT_FN_UNFENCED', value: '1' }] : [],
    });
    console.log(`serverless faults: helm install --wait took ${(took / 1000).toFixed(1)} s${unfenced ? ' (BREAK: the function without the fenced HTTP mode)' : ''}`);
    await scale(fnDeployment, 2);
  }, 900_000);
  afterAll(async () => {
    for (const c of cases) await c.stop();
    redis?.disconnect();
    await release?.uninstall();
    await sb?.cleanup();
    if (moduleDir) rmSync(moduleDir, { recursive: true, force: true });
  });

  it('a function pod paused (SIGSTOP on the host) past its key lease writes nothing stale when resumed; nothing overlaps or is lost', async () => {
    const c = await started('paused', 4);
    const slow = c.names[0]!;
    const storm = c.storm(40, slow);
    // The slow reconcile plans on the CPU until its clock jumps by more than 5 s (it was frozen), at most 90 s.
    await c.event(slow, { slow: 'spin', pauseMs: '5000', slowMs: '90000' });
    const victim = await c.slowStarted();
    const pod = (await podsOf(fnDeployment)).find((p) => p.metadata?.name === victim.pod);
    expect(pod, `the slow reconcile runs in ${victim.pod}, a pod of ${fnDeployment}`).toBeDefined();
    const pids = hostPids(containerId(pod!));
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    try {
      // An event for the key while the frozen pod holds it: the dispatcher times out, waits for the frozen pod's key
      // lease to run out, and the retry is reconciled by the other pod under a newer claim.
      await c.event(slow);
      await waitFor('another pod to reconcile the frozen key under a newer claim', 150_000, async () => ((await c.history()).some((r) => r.key === c.key(slow) && r.token !== victim.token && r.start > victim.at) ? true : undefined), 500);
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
    const done = await c.slowDone();
    await storm;
    const report = await c.check();
    console.log(`serverless faults: the paused reconcile ${JSON.stringify(done)}`);
    expectClean(report);
    // The freeze came mid-plan and outlasted the key lease (30 s from its start): the writes it went straight into
    // on waking were refused, none landed.
    expect(done.pausedMs).toBeGreaterThan(20_000);
    expect(done.outcome).not.toBe('accepted');
    expect(done.effects.map((e) => [e.kind, e.outcome])).toEqual([
      ['state', 'refused'],
      ['api', 'refused'],
    ]);
  }, 300_000);

  it('a function pod SIGKILLed mid-request: its work is retried on another pod, nothing overlaps or is lost', async () => {
    const c = await started('killed', 4);
    const slow = c.names[0]!;
    // The slow event is its key's last and only wake-up (its creation is reconciled first: a wake-up still pending
    // would re-run the key after the killed call, whatever the dispatcher did with it), so only the retry of the
    // killed request can bring the key to its final version: a call that failed after reaching the pod must be
    // retried, not dropped. A dead pod cannot write again, so the wait for its key lease does not show in effects
    // here; the paused case shows it.
    await c.converged(60_000);
    const storm = c.storm(40, slow);
    await c.event(slow, { slow: 'sleep', slowMs: '20000' });
    const victim = await c.slowStarted();
    const pod = (await podsOf(fnDeployment)).find((p) => p.metadata?.name === victim.pod);
    expect(pod).toBeDefined();
    const killed = ctr(['tasks', 'kill', '-s', 'SIGKILL', containerId(pod!)]);
    expect(killed.status, killed.stderr).toBe(0);
    await storm;
    const report = await c.check();
    expect(await redis.get(c.stateKey('slowDone'))).toBeNull(); // it died mid-request: it never finished
    expectClean(report);
    const retried = (await c.history()).filter((r) => r.key === c.key(slow) && r.version === c.versions.get(c.key(slow)));
    expect(retried.length, 'the killed request\'s version reconciled again').toBeGreaterThan(0);
    expect(retried.every((r) => r.token !== victim.token)).toBe(true);
    await scale(fnDeployment, 2);
  }, 300_000);

  it('the function scaled to zero while a request is in flight: it finishes, the work waits in the queue, nothing is lost', async () => {
    const c = await started('to-zero', 4);
    const slow = c.names[0]!;
    // Every change to the function queue's failures hash from here on, through Redis's keyspace notifications: a retry
    // spent on a call that found no pod shows as an HINCRBY there (the work must wait in the queue, not spin through
    // its retries). (Not MONITOR: on a busy Redis, ioredis may read a monitored line before it knows it is monitoring.)
    await redis.config('SET', 'notify-keyspace-events', 'Kh');
    const subscriber = new Redis(release.redis.port, '127.0.0.1', { password: release.redisPassword });
    const failuresCounted: number[] = [];
    subscriber.on('pmessage', (_pattern: string, _channel: string, op: string) => {
      if (op === 'hincrby') failuresCounted.push(Date.now());
    });
    await subscriber.psubscribe(`__keyspace@0__:*${FAULT_FUNCTION}*:ripple:failures`);
    try {
      await c.event(slow, { slow: 'sleep', slowMs: '4000' });
      const victim = await c.slowStarted();
      ok(release.kubectl(['scale', `deployment/${fnDeployment}`, '--replicas=0']), 'kubectl scale to 0');
      // Events while no function pod runs: the dispatcher holds them in the queue.
      await c.storm(30);
      await waitFor(`${fnDeployment} to have no pod`, 120_000, async () => ((await podsOf(fnDeployment)).length === 0 ? true : undefined));
      const gone = Date.now();
      const done = await c.slowDone();
      expect(done.outcome).toBe('accepted'); // the pod drained its in-flight request before it exited
      // A few seconds with no pod at all, as KEDA's cooldown would leave it: the held work must not be tried.
      await new Promise((r) => setTimeout(r, 3_000));
      const back = Date.now();
      await scale(fnDeployment, 2);
      const report = await c.check();
      expect(victim.pod).toBeTruthy();
      expectClean(report);
      // No retry spent, neither while the pods go away (a pod shutting down answers `draining` and lingers until the
      // dispatcher has closed its kept-alive connections, so no call is reset under it) nor once none exists.
      const going = failuresCounted.filter((t) => t < gone);
      const whileNone = failuresCounted.filter((t) => t >= gone && t <= back);
      console.log(`serverless faults: failures counted while the pods went away ${going.length}, with no pod ${whileNone.length} (${((back - gone) / 1000).toFixed(1)} s)`);
      expect(going, 'failures counted while the function\'s pods went away').toEqual([]);
      expect(whileNone, 'failures counted while the function had no pod').toEqual([]);
    } finally {
      subscriber.disconnect();
    }
  }, 300_000);

  it('the dispatcher killed mid-storm with a request in flight: its restart picks the work up, nothing overlaps or is lost', async () => {
    const c = await started('dispatcher', 6);
    const slow = c.names[0]!;
    const storm = c.storm(80, slow);
    // The killed dispatcher holds the slow key's last event in flight: the function may finish it or not, and either
    // way the job the dispatcher held (its lock left to expire) must come back to the restarted one and the queue drain.
    await c.event(slow, { slow: 'sleep', slowMs: '3000' });
    await c.slowStarted();
    const [dispatcher] = await podsOf(dispatcherDeployment);
    expect(dispatcher).toBeDefined();
    const killed = ctr(['tasks', 'kill', '-s', 'SIGKILL', containerId(dispatcher!)]);
    expect(killed.status, killed.stderr).toBe(0);
    await storm;
    const report = await c.check();
    expectClean(report);
    const after = await apps().readNamespacedDeployment({ name: dispatcherDeployment, namespace: sb.namespace });
    expect(after.status?.readyReplicas).toBe(1);
  }, 300_000);
});
