import { spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { createLogger } from '../../base/log.js';
import type { WatchEvent } from '../../watcher/events.js';
import { LeaderElector } from '../../watcher/leader.js';
import { ListWatch } from '../../watcher/list-watch.js';
import { mapToSelf } from '../../watcher/mappers.js';
import { onlyEvents } from '../../watcher/predicates.js';
import { startProcess, stopProcess } from '../harness/processes.js';
import { startRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { TcpProxy } from '../harness/tcp-proxy.js';

// The watcher's contracts (DESIGN "Watcher"), against the real API server: level-triggered through a cut
// connection, a forced 410 and an apiserver restart; leader election across processes; the resync tick.
const log = createLogger('watcher-test', 'warn');
let sb: TestSandbox;
const children: ChildProcess[] = [];
beforeAll(async () => {
  sb = await openSandbox('watch');
});
afterEach(async () => {
  for (const c of children.splice(0)) await stopProcess(c, 'SIGKILL');
});
afterAll(async () => {
  await sb.cleanup();
});

const summary = (e: WatchEvent) => `${e.type}:${e.object.metadata.name}${e.type === 'delete' && e.synthetic ? ':synthetic' : ''}`;

async function compactEtcd(): Promise<void> {
  const etcd = inject('etcdUrl');
  expect(etcd, 'this test needs the harness\'s own sandbox (RIPPLE_TEST_KUBECONFIG unset)').not.toBe('');
  const range = (await (await fetch(`${etcd}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) })).json()) as { header: { revision: string } };
  const res = await fetch(`${etcd}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: range.header.revision, physical: true }) });
  expect(res.ok).toBe(true);
}

/**
 * A watch of this test's ConfigMaps labelled `ripple.dev/test=<label>`, reached through its own TCP proxy so the test
 * can cut or blackhole the connection; every event is summarised into `seen`.
 */
async function proxiedConfigMapWatch(label: string, watchTimeoutSeconds: number) {
  const proxy = TcpProxy.forServer(sb.kc);
  await proxy.start();
  const seen: string[] = [];
  const lw = new ListWatch({
    kc: proxy.kubeConfig(sb.kc),
    resource: Resources.configMap,
    namespace: sb.namespace,
    labelSelector: `ripple.dev/test=${label}`,
    log,
    watchTimeoutSeconds: () => watchTimeoutSeconds,
    backoff: { initialMs: 200, maxMs: 1000, resetAfterMs: 60_000 },
    onEvent: async (e) => void seen.push(summary(e)),
  });
  const cm = (name: string) => ({ metadata: { name, labels: { 'ripple.dev/test': label } } });
  return { proxy, lw, seen, cm };
}

describe('watcher', () => {
  it('after a cut connection and a forced 410 it relists: changes arrive and vanished objects come out as synthetic deletes', async () => {
    const proxy = TcpProxy.forServer(sb.kc);
    await proxy.start();
    const seen: string[] = [];
    // PodTemplates bypass the apiserver's watch cache in the sandbox, so compacting etcd really expires
    // the watcher's resourceVersion (410 Gone), as an old one does on any cluster.
    const lw = new ListWatch({
      kc: proxy.kubeConfig(sb.kc),
      resource: { group: '', version: 'v1', kind: 'PodTemplate', plural: 'podtemplates', namespaced: true },
      namespace: sb.namespace,
      log,
      backoff: { initialMs: 200, maxMs: 1000, resetAfterMs: 60_000 },
      onEvent: async (e) => void seen.push(summary(e)),
    });
    try {
      const tpl = (name: string, image: string) => ({ metadata: { name }, template: { spec: { containers: [{ name: 'c', image }] } } });
      await sb.core.createNamespacedPodTemplate({ namespace: sb.namespace, body: tpl('keep', 'v1') });
      await sb.core.createNamespacedPodTemplate({ namespace: sb.namespace, body: tpl('gone', 'v1') });
      await waitFor('both creates', 15_000, async () => seen.includes('create:keep') && seen.includes('create:gone'));
      expect(lw.health().relists).toBe(1);

      proxy.cut();
      await waitFor('the watch to notice the cut', 15_000, async () => !lw.health().up);
      await sb.core.replaceNamespacedPodTemplate({ name: 'keep', namespace: sb.namespace, body: tpl('keep', 'v2') });
      await sb.core.deleteNamespacedPodTemplate({ name: 'gone', namespace: sb.namespace });
      await sb.core.createNamespacedPodTemplate({ namespace: sb.namespace, body: tpl('new', 'v1') });
      await compactEtcd();
      seen.length = 0;
      proxy.resume();

      await waitFor('the relist to deliver the gap', 30_000, async () => seen.length >= 3);
      expect(seen.sort()).toEqual(['create:new', 'delete:gone:synthetic', 'update:keep']);
      expect(lw.health()).toMatchObject({ up: true, relists: 2 });
    } finally {
      await lw.stop();
      await proxy.stop();
    }
  });

  it('an apiserver restart: changes made as it comes back, deletes included, reach the handler', async () => {
    const dir = inject('sandboxDir');
    expect(dir, 'this test restarts the harness\'s own sandbox (RIPPLE_TEST_KUBECONFIG unset)').not.toBe('');
    const last = new Map<string, string>();
    const core = sb.kc.makeApiClient(CoreV1Api);
    const fn: FunctionDefinition = {
      name: 'cm-restart',
      primary: Resources.configMap,
      triggers: [{ resource: Resources.configMap, map: mapToSelf }],
      // Reads fresh state, as every handler must: what it records is the object as it is now.
      reconcile: async ({ name, namespace }) => {
        try {
          const cm = await core.readNamespacedConfigMap({ name, namespace: namespace! });
          last.set(name, cm.data?.v ?? '');
        } catch (err) {
          if ((err as { code?: number }).code !== 404) throw err;
          last.set(name, 'absent');
        }
      },
    };
    const ripple = await startRipple(sb, [fn]);
    try {
      for (const n of ['a', 'b']) await core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: n }, data: { v: '1' } } });
      await waitFor('both reconciled', 15_000, async () => last.get('a') === '1' && last.get('b') === '1');

      const restart = spawnSync('bash', [path.resolve('infra/local-control-plane/restart.sh'), 'kube-apiserver'], { env: { ...process.env, RIPPLE_SANDBOX_DIR: dir }, encoding: 'utf8' });
      expect(restart.status, restart.stderr).toBe(0);
      await core.replaceNamespacedConfigMap({ name: 'a', namespace: sb.namespace, body: { metadata: { name: 'a' }, data: { v: '2' } } });
      await core.deleteNamespacedConfigMap({ name: 'b', namespace: sb.namespace });
      await core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'c' }, data: { v: '1' } } });

      await waitFor('every change after the restart to be reconciled', 60_000, async () => last.get('a') === '2' && last.get('b') === 'absent' && last.get('c') === '1');
      await waitFor('the watch to be healthy again', 30_000, async () => ripple.watcher.ready(1));
    } finally {
      await ripple.stop();
    }
  });

  it('two watcher replicas: only the leader enqueues; when it is killed the other takes over within ~15 s', async () => {
    const env = { KUBECONFIG: inject('kubeconfig'), REDIS_URL: sb.redisUrl, PREFIX: sb.prefix, NAMESPACE: sb.namespace };
    const holder = async () => {
      const lease = (await kubeRequest(sb.kc, objectPath(Resources.lease, sb.namespace, 'ripple-watcher')).catch(() => undefined)) as { spec?: { holderIdentity?: string } } | undefined;
      return lease?.spec?.holderIdentity;
    };
    const a = await startProcess('test/fixtures/watcher-process.ts', { ...env, IDENTITY: 'replica-a' });
    children.push(a);
    await waitFor('replica-a to lead', 20_000, async () => (await holder()) === 'replica-a');
    const b = await startProcess('test/fixtures/watcher-process.ts', { ...env, IDENTITY: 'replica-b' });
    children.push(b);

    const enqueued = async () => sb.redis.lrange(`${sb.prefix}:enqueued`, 0, -1);
    await sb.redis.del(`${sb.prefix}:enqueued`);
    for (let i = 0; i < 5; i++) await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: `steady-${i}` } } });
    await waitFor('five enqueues', 15_000, async () => (await enqueued()).length >= 5);
    await new Promise((r) => setTimeout(r, 2000)); // room for a double enqueue to show up, if there were one
    const steady = await enqueued();
    expect(steady).toHaveLength(5);
    expect(steady.every((e) => e.startsWith('replica-a|') && e.endsWith('|ConfigMap:create'))).toBe(true);

    const killedAt = Date.now();
    await stopProcess(a, 'SIGKILL');
    await waitFor('replica-b to take the lease', 30_000, async () => (await holder()) === 'replica-b', 250);
    const takeoverMs = Date.now() - killedAt;
    expect(takeoverMs).toBeLessThan(25_000);
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'after-failover' } } });
    await waitFor('the new leader to enqueue', 15_000, async () => (await enqueued()).some((e) => e.startsWith('replica-b|') && e.includes('/after-failover|')));
    console.error(`leader takeover after SIGKILL: ${takeoverMs} ms`);
  });

  it('the resync tick reconciles an object whose events were all blocked by predicates', async () => {
    const seen: Array<{ key: string; reason: string }> = [];
    const fn: FunctionDefinition = {
      name: 'cm-resync',
      primary: Resources.configMap,
      triggers: [{ resource: Resources.configMap, predicate: onlyEvents(), map: mapToSelf }],
      reconcile: async ({ key, reason }) => void seen.push({ key, reason }),
      resyncIntervalMs: 2000,
    };
    const ripple = await startRipple(sb, [fn]);
    try {
      await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'blocked' } } });
      await new Promise((r) => setTimeout(r, 500));
      expect(seen.filter((s) => s.key.endsWith('/blocked'))).toHaveLength(0); // the predicate blocked its create
      await ripple.host.scheduleResyncs();
      const hit = await waitFor('a resync reconcile', 10_000, async () => seen.find((s) => s.key === `${sb.namespace}/blocked`));
      expect(hit.reason).toBe('resync');
    } finally {
      await ripple.stop();
    }
  });

  it('a watch stuck before response headers (a blackholed connection) is given up on, and recovers once the network does', async () => {
    // The server ends each watch after 2 s, so the next one soon dials into the blackhole; silence is
    // judged after 2 + 2 s.
    const { proxy, lw, seen, cm } = await proxiedConfigMapWatch('blackhole', 2);
    try {
      await lw.waitForSync(15_000);
      await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: cm('before') });
      await waitFor('the create before the blackhole', 15_000, async () => seen.includes('create:before'));

      proxy.blackhole();
      // Only the idle timer can notice: client-node hands over no controller before headers arrive.
      await waitFor('the watch to give up on the silent connection', 20_000, async () => !lw.health().up);
      expect(lw.health().lastError).toMatch(/no data on the watch/);
      await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: cm('during') });

      proxy.resume(); // the connections already swallowed stay silent; only new ones get through
      await waitFor('the change made during the blackhole to arrive', 30_000, async () => seen.includes('create:during'));
      await waitFor('the watch to be up again', 15_000, async () => lw.health().up);
      expect(lw.health().relists).toBe(1);
    } finally {
      await lw.stop();
      await proxy.stop();
    }
  });

  it('after a cut connection the watch is up again as soon as the new stream carries a line, not when that stream ends', async () => {
    // Long watches: the reconnected one does not end (cleanly) for a minute.
    const { proxy, lw, seen, cm } = await proxiedConfigMapWatch('cut-up', 60);
    try {
      await lw.waitForSync(15_000);
      proxy.cut();
      await waitFor('the watch to notice the cut', 15_000, async () => !lw.health().up);
      proxy.resume();
      await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: cm('after') });
      await waitFor('the change made after the cut to arrive', 30_000, async () => seen.includes('create:after'));
      // Within a few seconds of the first line, far from the new watch's end (60 s).
      await waitFor('the watch to be up again', 5_000, async () => lw.health().up).catch((err: unknown) => {
        throw new Error(`${String(err)} (health: ${JSON.stringify(lw.health())})`);
      });
      expect(lw.health().relists).toBe(1);
    } finally {
      await lw.stop();
      await proxy.stop();
    }
  });

  it('leader election: a leader whose lease requests hang steps down by its renew deadline', async () => {
    const proxy = TcpProxy.forServer(sb.kc);
    await proxy.start();
    const timeline: string[] = [];
    const elector = new LeaderElector({
      kc: proxy.kubeConfig(sb.kc),
      namespace: sb.namespace,
      name: 'hang-lease',
      identity: 'hanging',
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 300,
      log,
      onStartedLeading: () => void timeline.push('started'),
      onStoppedLeading: () => void timeline.push('stopped'),
    });
    try {
      elector.start();
      await waitFor('it to lead', 15_000, async () => elector.isLeader());
      proxy.blackhole();
      const since = Date.now();
      await waitFor('it to step down', 5_000, async () => !elector.isLeader(), 25);
      // Its last renewal was sent before the blackhole, so the deadline is at most 2 s away.
      expect(Date.now() - since).toBeLessThan(2_500);
      expect(timeline).toEqual(['started', 'stopped']);
    } finally {
      proxy.resume();
      await elector.stop();
      await proxy.stop();
    }
  });

  it('leader election: stop() during an attempt neither starts leading nor leaves the lease held', async () => {
    // Stop at several moments of the first attempt, so some stops land while its write is in flight.
    for (const delayMs of [0, 2, 5, 10, 20, 40, 80]) {
      const name = `race-${delayMs}`;
      let stopping = false;
      let startedAfterStop = 0;
      const elector = new LeaderElector({ kc: sb.kc, namespace: sb.namespace, name, identity: 'racer', log, onStartedLeading: () => void (stopping && startedAfterStop++) });
      elector.start();
      await new Promise((r) => setTimeout(r, delayMs));
      stopping = true;
      await elector.stop();
      await new Promise((r) => setTimeout(r, 300)); // room for a late acquisition to show, if there were one
      const lease = (await kubeRequest(sb.kc, objectPath(Resources.lease, sb.namespace, name)).catch(() => undefined)) as { spec?: { holderIdentity?: string | null } } | undefined;
      expect({ delayMs, startedAfterStop, holder: lease?.spec?.holderIdentity ?? null }).toEqual({ delayMs, startedAfterStop: 0, holder: null });
    }
  });
});
