import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubeRequest } from '../../kube/raw.js';
import { Resources } from '../../kube/resources.js';
import { createLogger } from '../../base/log.js';
import { ListWatch } from '../../watcher/list-watch.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { watchEvents } from '../harness/watch-events.js';

// Issue 11: "kube-apiserver restart and etcd compaction on a quiet, label-selected watch: zero relists
// thanks to bookmarks". What kube-apiserver (1.34) can resume from decides the setup:
// - a watch served from the watch cache may resume from any resourceVersion the cache still holds;
//   the cache of a freshly started apiserver holds nothing before the revision it listed at start;
// - a watch served from etcd (no watch cache) gets no bookmarks at all, and a compaction expires it.
// So a pre-restart resourceVersion can only be resumed on another, running apiserver: the HA case,
// where a load balancer drains one apiserver, restarts it, and clients reconnect to a peer. This test
// builds that: apiserver A (the sandbox's) and a second one, B, on the same etcd, behind a TCP load
// balancer. The watch selects labels nothing carries, so it sees no event while other ConfigMaps
// churn; B starts after the watch began, so B's cache begins after the watch's list resourceVersion,
// as a long-running peer's cache window moves past a quiet watch's version. etcd is compacted past it.
// Only a bookmark can bring the watch forward: it resumes on B with zero relists, or relists on 410.
const log = createLogger('watch-bookmarks-test', 'info');
const SELECTOR = 'ripple.dev/quiet=yes';
let sb: TestSandbox;
let peer: ChildProcess | undefined;
let balancer: Balancer;

beforeAll(async () => {
  sb = await openSandbox('bookmarks');
  balancer = new Balancer();
  await balancer.start();
});
afterAll(async () => {
  if (peer?.pid) {
    try {
      process.kill(-peer.pid, 'SIGKILL'); // its own process group: see startPeer
    } catch {
      // already gone
    }
  }
  await balancer?.stop();
  await sb?.cleanup();
});

describe('fault: kube-apiserver restart and etcd compaction on a quiet, label-selected watch', () => {
  it('bookmarks carry the watch forward: it resumes on the peer apiserver with zero relists', async () => {
    const dir = inject('sandboxDir');
    expect(dir, 'this test restarts the harness\'s own sandbox apiserver (RIPPLE_TEST_KUBECONFIG unset; use RIPPLE_SANDBOX_DIR)').not.toBe('');
    const server = new URL(sb.kc.getCurrentCluster()!.server);
    balancer.upstream = Number(server.port);
    const viaBalancer = kubeConfigAt(sb.kc, balancer.port);

    const seen: string[] = [];
    const lw = new ListWatch({
      kc: viaBalancer,
      resource: Resources.configMap,
      namespace: sb.namespace,
      labelSelector: SELECTOR,
      log,
      backoff: { initialMs: 200, maxMs: 1000, resetAfterMs: 60_000 },
      onEvent: async (e) => void seen.push(`${e.type}:${e.object.metadata.name}`),
    });
    // An independent watch, same selector, started with the ListWatch: proof that the apiserver sends
    // bookmarks and what resourceVersion they carry, whatever the code under test does with them.
    const probe = new BookmarkProbe();
    try {
      await lw.waitForSync(30_000);
      await probe.start(sb.kc, sb.namespace, SELECTOR);
      const startedAt = Date.now();
      expect(lw.health().relists).toBe(1);

      // Churn other objects: the watch's selector matches none of them, so it sees nothing, and its
      // resourceVersion falls behind: the peer's cache will begin after it.
      let churnRv = '';
      const churn = async (from: number, to: number) => {
        for (let i = from; i < to; i++) {
          const cm = await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: `noise-${i}` }, data: { i: String(i) } } });
          churnRv = cm.metadata!.resourceVersion!;
        }
      };
      await churn(0, 15);

      // The peer: a second kube-apiserver on the same etcd and certificates, on a port of its own.
      const peerPort = await freePort();
      peer = startPeer(dir, peerPort);
      await waitFor('the peer apiserver to be ready', 90_000, async () => readyz(peerPort), 500);

      await churn(15, 30);
      expect(seen).toEqual([]);
      await compactEtcd();

      // kube-apiserver sends a bookmark to each watch about once a minute (and 2 s before its timeout).
      const bookmark = await waitFor('a bookmark past the churn', 110_000, async () => probe.bookmarks.find((rv) => Number(rv) >= Number(churnRv)), 500);
      await waitFor('the watch under test to have taken a bookmark past the churn', 15_000, async () => Number(lw.health().resourceVersion ?? 0) >= Number(churnRv), 200);
      console.error(`faults: watch-bookmarks: first bookmark past the churn after ${Math.round((Date.now() - startedAt) / 1000)} s (rv ${bookmark}; churn rv ${churnRv}); watch at rv ${lw.health().resourceVersion}`);
      probe.stop();

      // Drain A at the load balancer, then restart it: the watch's connection dies with A and the
      // watch reconnects through the balancer to B.
      balancer.upstream = peerPort;
      const restart = spawnSync('bash', [path.resolve('infra/local-control-plane/restart.sh'), 'kube-apiserver'], { env: { ...process.env, RIPPLE_SANDBOX_DIR: dir }, encoding: 'utf8' });
      expect(restart.status, restart.stderr).toBe(0);

      await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'after-restart', labels: { 'ripple.dev/quiet': 'yes' } } } });
      await waitFor('the change after the restart to arrive', 60_000, async () => seen.includes('create:after-restart'));
      const relists = lw.health().relists;
      console.error(`faults: watch-bookmarks: relists=${relists} (1 is the initial list) events=${JSON.stringify(seen)}`);
      expect(seen).toEqual(['create:after-restart']);
      expect(relists).toBe(1);
    } finally {
      probe.stop();
      await lw.stop();
    }
  }, 240_000);
});

async function compactEtcd(): Promise<void> {
  const etcd = inject('etcdUrl');
  expect(etcd, 'this test needs the harness\'s own sandbox (RIPPLE_TEST_KUBECONFIG unset)').not.toBe('');
  const range = (await (await fetch(`${etcd}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) })).json()) as { header: { revision: string } };
  const res = await fetch(`${etcd}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: range.header.revision, physical: true }) });
  expect(res.ok).toBe(true);
}

/** Starts kube-apiserver with the sandbox's own flags (restart.sh's saved command) and another port. */
function startPeer(dir: string, port: number): ChildProcess {
  const out = openSync(path.join(dir, 'logs', 'kube-apiserver-peer.log'), 'a');
  // The saved command is shell-quoted (printf %q), as restart.sh evaluates it. The flag given last
  // wins, so the peer keeps every flag but the port. Detached: its own process group, stopped in one signal.
  // It leaves the `kubernetes` Service's endpoint alone: both advertise the same address, and the peer's port
  // would otherwise stay there after it stops, so pods on the real node would dial a closed port.
  const script = 'eval "exec $(cat "$1") --secure-port $2 --endpoint-reconciler-type none"';
  return spawn('bash', ['-c', script, 'peer', path.join(dir, 'cmd', 'kube-apiserver'), String(port)], { detached: true, stdio: ['ignore', out, out] });
}

/** kubectl get --raw /readyz against one apiserver (the answer is plain text, not JSON). */
function readyz(port: number): boolean {
  const kubectl = path.resolve('.cache/control-plane/bin/kubectl');
  const res = spawnSync(kubectl, ['--kubeconfig', inject('kubeconfig'), '--server', `https://127.0.0.1:${port}`, 'get', '--raw', '/readyz'], { encoding: 'utf8' });
  return res.status === 0;
}

function kubeConfigAt(kc: KubeConfig, port: number): KubeConfig {
  const cluster = kc.getCurrentCluster()!;
  const at = new KubeConfig();
  at.loadFromOptions({ clusters: [{ ...cluster, server: `https://127.0.0.1:${port}` }], users: kc.getUsers(), contexts: kc.getContexts(), currentContext: kc.getCurrentContext() });
  return at;
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A TCP load balancer in front of the apiservers: new connections go to `upstream`, open ones stay put. */
class Balancer {
  upstream = 0;
  port = 0;
  private readonly sockets = new Set<net.Socket>();
  private server?: net.Server;

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.upstream, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => {
          this.sockets.delete(s);
          // One side gone ends the other, as a load balancer does: the client sees its connection die.
          (s === client ? upstream : client).destroy();
        });
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** A plain watch with bookmarks, recording the resourceVersion of each bookmark the apiserver sends. */
class BookmarkProbe {
  readonly bookmarks: string[] = [];
  private controller?: { abort(): void };

  async start(kc: KubeConfig, namespace: string, labelSelector: string): Promise<void> {
    const list = (await kubeRequest(kc, `/api/v1/namespaces/${namespace}/configmaps`, { query: { labelSelector } })) as { metadata: { resourceVersion: string } };
    // Quiet by design (its selector matches nothing): client-node 2.x's Watch would end it after 30 s without data.
    this.controller = await watchEvents(
      kc,
      `/api/v1/namespaces/${namespace}/configmaps`,
      { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 600, labelSelector },
      (type: string, obj: { metadata?: { resourceVersion?: string } }) => {
        if (type === 'BOOKMARK' && obj.metadata?.resourceVersion) this.bookmarks.push(obj.metadata.resourceVersion);
      },
    );
  }

  stop(): void {
    this.controller?.abort();
    this.controller = undefined;
  }
}
