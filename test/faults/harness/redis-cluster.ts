import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from '../../../sandbox/free-port.js';
import { waitFor } from '../../harness/sandbox.js';
import { waitForPing } from './redis-process.js';

const run = promisify(execFile);

interface ClusterNode {
  port: number;
  child: ChildProcess;
}

/** One line of CLUSTER NODES: who is primary of which slots, and whose replica each replica is. */
export interface NodeInfo {
  id: string;
  port: number;
  primary: boolean;
  /** The primary's id, for a replica. */
  primaryId?: string;
  /** Slot ranges a primary serves, [from, to] inclusive. */
  slots: Array<[number, number]>;
}

/**
 * A real Redis Cluster of 3 primaries and 3 replicas (Debian's redis-server in cluster mode), each on
 * free ports of its own (client port and cluster bus port), with the AOF on. Made with
 * `redis-cli --cluster create … --cluster-replicas 1`, ready once every node says cluster_state:ok and
 * every replica's link to its primary is up (a manual failover needs a synced replica).
 */
export class RedisCluster {
  private constructor(
    private readonly nodes: ClusterNode[],
    readonly dir: string,
  ) {}

  /** `redis+cluster://h:p,…` with every node as a seed, as queue/connection.ts reads it. */
  get url(): string {
    return `redis+cluster://${this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`;
  }

  static async start(size = 6): Promise<RedisCluster> {
    const dir = mkdtempSync(path.join(tmpdir(), 'ripple-faults-cluster-'));
    const cluster = new RedisCluster([], dir);
    try {
      for (let i = 0; i < size; i++) {
        const port = await freePort();
        const busPort = await freePort();
        const nodeDir = path.join(dir, String(port));
        mkdirSync(nodeDir);
        const args = [
          '--port', String(port), '--bind', '127.0.0.1', '--dir', nodeDir,
          '--cluster-enabled', 'yes', '--cluster-port', String(busPort), '--cluster-config-file', 'nodes.conf',
          // A primary that stops answering is noticed within seconds, not the default 15.
          '--cluster-node-timeout', '3000',
          '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec',
        ];
        const child = spawn('redis-server', args, { stdio: 'ignore' });
        cluster.nodes.push({ port, child });
        await waitForPing(`redis://127.0.0.1:${port}`, 15_000, () => child.exitCode !== null);
      }
      await run('redis-cli', ['--cluster', 'create', ...cluster.nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: 60_000 });
      await cluster.waitUntilHealthy();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** Every node says cluster_state:ok, agrees on 3 primaries covering all slots, and each replica is synced. */
  async waitUntilHealthy(timeoutMs = 60_000): Promise<void> {
    await waitFor('every cluster node to report cluster_state:ok with synced replicas', timeoutMs, async () => {
      for (const n of this.nodes) {
        const ok = await this.withNode(n.port, async (r) => {
          const info = String(await r.call('CLUSTER', 'INFO'));
          if (!/cluster_state:ok/.test(info)) return false;
          const view = parseNodes(String(await r.call('CLUSTER', 'NODES')));
          if (view.filter((v) => v.primary && v.slots.length > 0).length !== 3) return false;
          const repl = await r.info('replication');
          return /role:master/.test(repl) || /master_link_status:up/.test(repl);
        }).catch(() => false);
        if (!ok) return false;
      }
      return true;
    }, 250);
  }

  /** The cluster's current layout, as node `port` (default: the first) sees it. */
  async topology(port = this.nodes[0]!.port): Promise<NodeInfo[]> {
    return this.withNode(port, async (r) => parseNodes(String(await r.call('CLUSTER', 'NODES'))));
  }

  /** The primary serving the slot of `key` (a hash tag counts). */
  async primaryOf(key: string): Promise<NodeInfo> {
    const slot = Number(await this.withNode(this.nodes[0]!.port, (r) => r.call('CLUSTER', 'KEYSLOT', key)));
    const primary = (await this.topology()).find((n) => n.primary && n.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!primary) throw new Error(`no primary serves slot ${slot} of ${key}`);
    return primary;
  }

  /**
   * `CLUSTER FAILOVER` sent to a replica of `primary`: the coordinated manual failover (the primary
   * stops writes, the replica catches up, then takes its slots). Waits until every node sees the
   * replica as primary and the cluster is healthy again (the old primary now its replica).
   */
  async failover(primary: NodeInfo): Promise<{ from: number; to: number }> {
    const replica = (await this.topology()).find((n) => !n.primary && n.primaryId === primary.id);
    if (!replica) throw new Error(`primary :${primary.port} has no replica`);
    await this.withNode(replica.port, (r) => r.call('CLUSTER', 'FAILOVER'));
    await waitFor(`every node to see :${replica.port} as primary`, 60_000, async () => {
      for (const n of this.nodes) {
        const view = await this.topology(n.port).catch(() => []);
        if (!view.some((v) => v.id === replica.id && v.primary && v.slots.length > 0)) return false;
      }
      return true;
    }, 100);
    await this.waitUntilHealthy();
    return { from: primary.port, to: replica.port };
  }

  private async withNode<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
    const r = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => undefined);
    try {
      await r.connect();
      return await fn(r);
    } finally {
      r.disconnect();
    }
  }

  async stop(): Promise<void> {
    for (const n of this.nodes) {
      if (n.child.exitCode !== null || n.child.signalCode !== null) continue;
      const exited = new Promise<void>((resolve) => n.child.once('exit', () => resolve()));
      n.child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** CLUSTER NODES: `<id> <ip:port@bus> <flags> <primary-id|-> <ping> <pong> <epoch> <link> <slot>…`. */
export function parseNodes(text: string): NodeInfo[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      const [id, addr, flags, primaryId, , , , , ...slots] = line.split(' ');
      const primary = (flags ?? '').split(',').includes('master') && !(flags ?? '').includes('fail');
      return {
        id: id!,
        port: Number(addr!.split('@')[0]!.split(':').pop()),
        primary,
        ...(primaryId && primaryId !== '-' ? { primaryId } : {}),
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s): [number, number] => {
            const [a, b] = s.split('-');
            return [Number(a), Number(b ?? a)];
          }),
      };
    });
}
