import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

/** A Redis that Ripple can use, and how to stop it if Ripple started it. */
export interface RedisServer {
  url: string;
  /** Where it came from, for the start-up message. */
  source: 'REDIS_URL' | 'redis-server' | 'testcontainers';
  /** The local redis-server's pid, when this helper started one (the sandbox records it: ControlPlane.recordProcess). */
  pid?: number;
  stop(): Promise<void>;
}

export interface RedisOptions {
  /** Overrides process.env.REDIS_URL (tests pass what the global setup provided). */
  url?: string;
  log?: (line: string) => void;
  /**
   * Start a local redis-server in a session of its own, out of reach of signals sent to this process's
   * group (the main command, which records and stops it itself). Otherwise it stays in the caller's
   * group, so a test run killed as a group (`timeout`, a CI runner) takes its Redis along.
   */
  ownSession?: boolean;
  /**
   * 'testcontainers': run Redis in a container through testcontainers even where redis-server exists, and
   * fail when no container runtime answers (the harness's test of that path, test/harness/container-runtime.ts).
   */
  via?: 'testcontainers';
  /** The testcontainers Redis's image: RIPPLE_REDIS_IMAGE, else Docker Hub's redis:7.4-alpine (pulled). */
  image?: string;
  /**
   * The testcontainers Redis's network mode, when the runtime's default does not suit: rootful podman's is a
   * CNI bridge with iptables rules, which the harness keeps off the host with 'slirp4netns'.
   */
  networkMode?: string;
}

/**
 * One helper for the tests and the main command: REDIS_URL when set; otherwise a local
 * redis-server on a free port (Debian's package, installed by scripts/ensure-deps.sh); otherwise
 * a testcontainers Redis when a container runtime answers. `via: 'testcontainers'` asks for the container
 * directly (test/integration/testcontainers-redis.test.ts runs it on podman with a Redis image built here).
 */
export async function startRedis(opts: RedisOptions = {}): Promise<RedisServer> {
  const log = opts.log ?? (() => undefined);
  const given = opts.url ?? process.env.REDIS_URL;
  if (given) {
    await waitForPing(given, 5_000);
    return { url: given, source: 'REDIS_URL', stop: async () => undefined };
  }
  const image = opts.image ?? process.env.RIPPLE_REDIS_IMAGE ?? 'redis:7.4-alpine';
  if (opts.via === 'testcontainers') {
    const unanswered = await noContainerRuntime();
    if (unanswered) throw new Error(`No container runtime answered for a testcontainers Redis (DOCKER_HOST=${process.env.DOCKER_HOST ?? 'unset'}): ${unanswered}`);
    return startContainer(log, image, opts.networkMode);
  }
  if (spawnSync('redis-server', ['--version']).status === 0) return startLocal(log, opts.ownSession === true);
  if (!(await noContainerRuntime())) return startContainer(log, image, opts.networkMode);
  throw new Error(
    'No Redis: set REDIS_URL, or install redis-server (apt-get install -y redis-server, or run scripts/ensure-deps.sh), or start a container runtime for testcontainers.',
  );
}

async function startLocal(log: (line: string) => void, ownSession: boolean): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-redis-'));
  // No persistence: this Redis lives only as long as the process that started it. The main command runs
  // it in a session of its own: a terminal's Ctrl-C reaches the whole foreground process group, and a
  // Redis stopped by it at once would go before the workers that still use it, whose last lines would
  // then be connection errors from a shutdown that in fact succeeded. Its starter stops it, last.
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore', detached: ownSession },
  );
  const url = `redis://127.0.0.1:${port}`;
  log(`redis: started redis-server on ${url}`);
  try {
    await waitForPing(url, 10_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    url,
    source: 'redis-server',
    pid: child.pid,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Why no container runtime answers testcontainers, or undefined when one does. */
async function noContainerRuntime(): Promise<string | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return undefined;
  } catch (err) {
    return String(err);
  }
}

async function startContainer(log: (line: string) => void, image: string, networkMode: string | undefined): Promise<RedisServer> {
  const { RedisContainer } = await import('@testcontainers/redis');
  // A password: the runtime may publish the port on every interface of the host, not only its loopback.
  const definition = new RedisContainer(image).withPassword(randomBytes(16).toString('hex'));
  const container = await (networkMode ? definition.withNetworkMode(networkMode) : definition).start();
  const url = container.getConnectionUrl();
  log(`redis: started a testcontainers Redis (${image}) on redis://${container.getHost()}:${container.getPort()}`);
  return { url, source: 'testcontainers', stop: async () => void (await container.stop()) };
}

async function waitForPing(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    // Refused connections while the server starts are expected; the loop below reports the last one.
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
