import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyedWorker } from '../../queue/worker.js';
import { WorkQueue } from '../../queue/work-queue.js';
import { createLogger } from '../../base/log.js';
import { startRedis, type RedisServer } from '../../sandbox/redis.js';
import { REDIS_IMAGE, startContainerRuntime, testcontainersEnv, type ContainerRuntime } from '../harness/container-runtime.js';
import { waitFor } from '../harness/sandbox.js';

// testcontainers for real: the harness's Redis helper (sandbox/redis.ts) starts its Redis through
// @testcontainers/redis, on podman's Docker-compatible service (this machine has no Docker), from the Redis
// image infra/images/build.sh builds here (nothing is pulled), and Ripple's keyed queue runs on it. The
// host's redis-server stays every other test's Redis. Needs root; fails saying what is missing otherwise.
const log = createLogger('testcontainers-test', 'warn');
let runtime: ContainerRuntime | undefined;
let redis: RedisServer | undefined;
let iptablesBefore: string[];
const linksBefore = links();
const hostDirsBefore = ['/run/netns', '/run/runc'].filter((d) => existsSync(d));
let tcEnv: Record<string, string> = {};
const saved = { ...process.env };

beforeAll(async () => {
  iptablesBefore = iptables();
  const started = Date.now();
  runtime = await startContainerRuntime({ archives: ['redis.tar'], log: (l) => console.error(l) });
  // testcontainers reads these when its client is first made (in startRedis).
  tcEnv = testcontainersEnv(runtime);
  Object.assign(process.env, tcEnv);
  redis = await startRedis({ via: 'testcontainers', image: REDIS_IMAGE, networkMode: runtime.networkMode, log: (l) => console.error(l) });
  console.error(`testcontainers: runtime and Redis container ready in ${Date.now() - started} ms`);
});

afterAll(async () => {
  await redis?.stop();
  await runtime?.stop();
  for (const k of Object.keys(tcEnv)) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

describe('testcontainers on podman, with the Redis image built here', () => {
  it('the Redis helper starts its Redis through @testcontainers/redis in a podman container of ripple.local/redis:7', async () => {
    expect(redis!.source).toBe('testcontainers');
    const client = new Redis(redis!.url, { maxRetriesPerRequest: 1 });
    try {
      const info = await client.info('server');
      // PID 1 in its own PID namespace: a container, not the host's redis-server; Debian bookworm's Redis 7.
      expect(info).toMatch(/^process_id:1\r?$/m);
      expect(info).toMatch(/^redis_version:7\./m);
    } finally {
      client.disconnect();
    }
    // The helper gave it a password (the port is published on the host): a client without it is refused.
    const anonymous = new Redis(redis!.url.replace(/\/\/:[^@]*@/, '//'), { maxRetriesPerRequest: 0, lazyConnect: true });
    anonymous.on('error', () => undefined);
    await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
    anonymous.disconnect();

    const ps = runtime!.podman(['ps', '--format', '{{.ID}} {{.Image}}']);
    expect(ps.status, ps.stderr).toBe(0);
    const rows = ps.stdout.trim().split('\n');
    expect(rows).toHaveLength(1);
    const [id, image] = rows[0]!.split(' ');
    expect(image).toBe(REDIS_IMAGE);
    // User-mode networking: no bridge, no iptables rule, nothing of the real node's touched.
    const mode = runtime!.podman(['inspect', '--format', '{{.HostConfig.NetworkMode}}', id!]);
    expect(mode.stdout.trim()).toBe('slirp4netns');
    expect(links().filter((l) => !linksBefore.includes(l))).toEqual([]);
    expect(iptables().filter((r) => r.includes(id!) || /podman|NETAVARK/i.test(r))).toEqual([]);
  });

  it("Ripple's keyed queue round trip on it: no overlap on a key, no lost update, events coalesced", async () => {
    const prefix = `tc-${Math.random().toString(36).slice(2, 8)}`;
    const connections: Redis[] = [];
    const conn = () => {
      const c = new Redis(redis!.url, { maxRetriesPerRequest: null });
      connections.push(c);
      return c;
    };
    const queue = new WorkQueue({ name: 'tc', connection: conn(), prefix });
    const data = conn();
    const running = new Set<string>();
    const seen = new Map<string, number>();
    let reconciles = 0;
    let overlaps = 0;
    const workers = [0, 1].map(
      () =>
        new KeyedWorker({
          queue,
          connection: conn(),
          prefix,
          concurrency: 2,
          log,
          reconcile: async ({ key }) => {
            if (running.has(key)) overlaps++;
            running.add(key);
            reconciles++;
            try {
              // Reads the object's latest version, as a reconcile reads the cluster.
              const version = Number(await data.get(`${prefix}:version:${key}`));
              await new Promise((r) => setTimeout(r, 10));
              seen.set(key, Math.max(seen.get(key) ?? 0, version));
            } finally {
              running.delete(key);
            }
          },
        }),
    );
    try {
      const keys = ['ns/a', 'ns/b', 'ns/c', 'ns/d'];
      const events = 400;
      for (let i = 0; i < events; i++) {
        const key = keys[i % keys.length]!;
        await data.incr(`${prefix}:version:${key}`); // the object changes…
        await queue.add(key); // …and its watch event is enqueued
      }
      await waitFor('every key reconciled at its last version', 60_000, async () =>
        keys.every((k) => seen.get(k) === events / keys.length) && running.size === 0,
      );
      await waitFor('the queue to drain', 30_000, async () => {
        const k = queue.keys;
        const [due, active, dirty] = await Promise.all([data.zcard(k.due), data.hlen(k.active), data.zcard(k.dirty)]);
        return due + active + dirty === 0;
      });
      expect(overlaps).toBe(0);
      expect(reconciles).toBeLessThan(events);
      console.error(`testcontainers: ${events} events on ${keys.length} keys, ${reconciles} reconciles through the container's Redis`);
    } finally {
      for (const w of workers) await w.close();
      await queue.close();
      for (const c of connections) c.disconnect();
    }
  });

  it('stopping leaves nothing behind: no container, process, mount, socket, network namespace or iptables rule', async () => {
    const dir = runtime!.dir;
    await redis!.stop();
    redis = undefined;
    expect(runtime!.podman(['ps', '--all', '--quiet']).stdout.trim()).toBe('');
    await runtime!.stop();
    expect(existsSync(dir)).toBe(false);
    expect(readFileSync('/proc/mounts', 'utf8').split('\n').filter((m) => m.includes(dir) || m.split(' ')[1] === '/run/netns' && !hostDirsBefore.includes('/run/netns'))).toEqual([]);
    const left = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && cmdline(p).includes(dir));
    expect(left.map(cmdline)).toEqual([]);
    for (const d of ['/run/netns', '/run/runc']) if (!hostDirsBefore.includes(d)) expect(existsSync(d), d).toBe(false);
    expect(links().filter((l) => !linksBefore.includes(l))).toEqual([]);
    expect(iptables().filter((r) => !iptablesBefore.includes(r))).toEqual([]);
  });
});

function cmdline(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** The host's network links by name, less the real node's pods' veths (which come and go). */
function links(): string[] {
  return readdirSync('/sys/class/net').filter((l) => !l.startsWith('veth'));
}

/** The host's iptables rules, less counters and the real node's chains (kube-proxy rewrites them). */
function iptables(): string[] {
  const out = spawnSync('iptables-save', [], { encoding: 'utf8' });
  if (out.status !== 0) return [];
  return out.stdout.split('\n').filter((l) => l.startsWith('-A') && !/KUBE-|CNI-/.test(l));
}
