import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../../sandbox/free-port.js';
import { waitFor } from '../../harness/sandbox.js';
import { RedisProcess, waitForPing } from './redis-process.js';

export const MASTER_NAME = 'ripple-faults';

/**
 * A real Redis primary and replica watched by three real Sentinels (Debian's redis-sentinel), quorum 2,
 * each of the case's own on free ports. Sentinels rewrite their config files, so each gets its own.
 */
export class SentinelCluster {
  private constructor(
    readonly primary: RedisProcess,
    readonly replica: RedisProcess,
    private readonly sentinels: Array<{ port: number; child: ChildProcess }>,
    private readonly dir: string,
  ) {}

  /** `redis+sentinel://h1:p1,h2:p2,h3:p3/<masterName>`, as queue/connection.ts reads it. */
  get url(): string {
    return `redis+sentinel://${this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${MASTER_NAME}`;
  }

  static async start(): Promise<SentinelCluster> {
    const primary = await RedisProcess.start();
    const replica = await RedisProcess.start(['--replicaof', '127.0.0.1', String(primary.port)]);
    const dir = mkdtempSync(path.join(tmpdir(), 'ripple-faults-sentinel-'));
    const sentinels: Array<{ port: number; child: ChildProcess }> = [];
    const cluster = new SentinelCluster(primary, replica, sentinels, dir);
    try {
      for (let i = 0; i < 3; i++) {
        const port = await freePort();
        const conf = path.join(dir, `sentinel-${i}.conf`);
        writeFileSync(
          conf,
          [
            `port ${port}`,
            'bind 127.0.0.1',
            `dir ${dir}`,
            `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primary.port} 2`,
            // Short timings: a dead primary is noticed within a second and a failover does not wait minutes.
            `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
            `sentinel failover-timeout ${MASTER_NAME} 10000`,
            `sentinel parallel-syncs ${MASTER_NAME} 1`,
            '',
          ].join('\n'),
        );
        const child = spawn('redis-sentinel', [conf], { stdio: 'ignore' });
        sentinels.push({ port, child });
        await waitForPing(`redis://127.0.0.1:${port}`, 15_000, () => child.exitCode !== null);
      }
      await cluster.waitUntilSettled(primary.port);
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** Asks one Sentinel where the primary is now. */
  async primaryPort(): Promise<number> {
    return this.withSentinel(0, async (s) => {
      const addr = (await s.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [string, string] | null;
      if (!addr) throw new Error(`no Sentinel knows ${MASTER_NAME}`);
      return Number(addr[1]);
    });
  }

  /**
   * Waits until every Sentinel names `primaryPort` as primary, knows one replica that is up and sees
   * the two other Sentinels: only then can a failover be agreed and a client find the primary.
   */
  async waitUntilSettled(primaryPort: number, timeoutMs = 60_000): Promise<void> {
    await waitFor(`every Sentinel to agree on primary :${primaryPort} with a replica and two peers`, timeoutMs, async () => {
      for (let i = 0; i < this.sentinels.length; i++) {
        const ok = await this.withSentinel(i, async (s) => {
          const addr = (await s.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [string, string] | null;
          if (!addr || Number(addr[1]) !== primaryPort) return false;
          const replicas = (await s.call('SENTINEL', 'replicas', MASTER_NAME)) as string[][];
          const upReplicas = replicas.filter((r) => {
            const flags = r[r.indexOf('flags') + 1] ?? '';
            return !/s_down|o_down|disconnected/.test(flags) && r[r.indexOf('master-link-status') + 1] === 'ok';
          });
          const peers = (await s.call('SENTINEL', 'sentinels', MASTER_NAME)) as string[][];
          return upReplicas.length >= 1 && peers.length >= 2;
        }).catch(() => false);
        if (!ok) return false;
      }
      return true;
    }, 250);
  }

  /** `SENTINEL FAILOVER`: promotes the replica now, without waiting for the primary to fail. */
  async failover(): Promise<{ from: number; to: number }> {
    const from = await this.primaryPort();
    await this.withSentinel(0, (s) => s.call('SENTINEL', 'FAILOVER', MASTER_NAME));
    return { from, to: await this.newPrimary(from) };
  }

  /**
   * `kill -9` of the primary: the Sentinels see it down (1 s), agree (quorum 2) and promote the replica;
   * then the old primary is started again from its AOF and rejoins as a replica of the new one.
   */
  async killPrimary(): Promise<{ from: number; to: number }> {
    const from = await this.primaryPort();
    const old = from === this.primary.port ? this.primary : this.replica;
    await old.kill9();
    const to = await this.newPrimary(from);
    await old.restart();
    return { from, to };
  }

  private async newPrimary(from: number): Promise<number> {
    return waitFor('the Sentinels to promote the replica', 60_000, async () => {
      const port = await this.primaryPort().catch(() => from);
      return port !== from ? port : undefined;
    }, 100);
  }

  private async withSentinel<T>(i: number, fn: (s: Redis) => Promise<T>): Promise<T> {
    const s = new Redis(this.sentinels[i]!.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    s.on('error', () => undefined);
    try {
      await s.connect();
      return await fn(s);
    } finally {
      s.disconnect();
    }
  }

  async stop(): Promise<void> {
    for (const s of this.sentinels) {
      if (s.child.exitCode === null && s.child.signalCode === null) {
        const exited = new Promise<void>((resolve) => s.child.once('exit', () => resolve()));
        s.child.kill('SIGKILL');
        await exited;
      }
    }
    await this.replica.stop();
    await this.primary.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
