import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../../sandbox/free-port.js';

/**
 * A redis-server of one fault case's own, on a free port, with every write in the AOF and fsynced before
 * it is acknowledged (`appendfsync always`): a `kill -9` then loses nothing Redis acknowledged, so what
 * the case sees after a restart is the queue's own doing, not lost writes.
 */
export class RedisProcess {
  private child?: ChildProcess;
  readonly dir: string;

  private constructor(
    readonly port: number,
    private readonly extraArgs: string[],
  ) {
    this.dir = mkdtempSync(path.join(tmpdir(), 'ripple-faults-redis-'));
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  static async start(extraArgs: string[] = []): Promise<RedisProcess> {
    const r = new RedisProcess(await freePort(), extraArgs);
    await r.spawn();
    return r;
  }

  private async spawn(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', ...this.extraArgs];
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    this.child = child;
    await waitForPing(this.url, 15_000, () => child.exitCode !== null);
  }

  /** `kill -9`: no shutdown, no final fsync beyond what `appendfsync always` already did. */
  async kill9(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  /** Starts it again on the same port and directory: it replays its AOF. */
  async restart(): Promise<void> {
    await this.kill9();
    await this.spawn();
  }

  async stop(): Promise<void> {
    await this.kill9();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Waits until `url` answers PING (or `dead()` says the server exited, which fails at once). */
export async function waitForPing(url: string, timeoutMs: number, dead: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    if (dead()) throw new Error(`the server for ${url} exited while starting`);
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    // Refused connections while the server starts are expected; the error below reports the last one.
    client.on('error', () => undefined);
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch (err) {
      last = err;
    } finally {
      client.disconnect();
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Redis at ${url} did not answer PING within ${timeoutMs} ms: ${String(last)}`);
}
