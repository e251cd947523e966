import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { z } from 'zod';
import { realNode } from '../../sandbox/real-node.js';
import { RedisProcess } from '../faults/harness/redis-process.js';
import { useRealNode } from './real-node.js';
import type { TestSandbox } from './sandbox.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, '.cache', 'control-plane', 'bin');
export const RIPPLE_VERSION = z.object({ version: z.string() }).parse(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))).version;

export interface Run { status: number; stdout: string; stderr: string }
export function ok(r: Run, what: string): string {
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}):\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

/**
 * Ripple as its users run it, for the real node's tests: Ripple's image (built here from infra/deploy/Dockerfile,
 * infra/images/build.sh ripple; cached under its stamp) installed by its Helm chart, every pod a real container on
 * the sandbox's real node, talking to the API server through the `kubernetes` Service with its own ServiceAccount,
 * and to a Redis outside the cluster (a password-protected redis-server on the node's bridge address) through a
 * Service without a selector — the shape of a managed Redis. Confined to the test's namespace and prefix.
 */
export class RippleRelease {
  private constructor(
    readonly sb: TestSandbox,
    readonly name: string,
    readonly redis: RedisProcess,
    private readonly work: string,
    private readonly kubeconfig: string,
  ) {}

  /**
   * Builds the images (at once when current), starts the node (at once when running) and Redis; installs nothing.
   * `where`: the sandbox outside a test run (a bench); by default the test run's. `images`: infra/images/build.sh's
   * targets the release runs, Ripple's own by default (`configmap-stamp`: an image built FROM it with a function of
   * one's own).
   */
  static async prepare(sb: TestSandbox, name: string, where?: { kubeconfig: string; sandboxDir: string }, images: string[] = ['ripple']): Promise<RippleRelease> {
    const work = mkdtempSync(path.join(tmpdir(), 'ripple-release-'));
    const node = realNode();
    // The node first: Redis binds to its bridge address, which exists only while the node runs (the smoke test stops
    // the node, and a file after it found no address to bind: "the server … exited while starting").
    await useRealNode(where?.sandboxDir);
    const redis = await RedisProcess.start(['--bind', `127.0.0.1 ${node.ip}`]);
    const release = new RippleRelease(sb, name, redis, work, where?.kubeconfig ?? inject('kubeconfig'));
    ok(release.run('bash', [path.join(root, 'infra', 'images', 'build.sh'), ...images]), `building the images ${images.join(', ')}`);
    // An image may have changed since the node started: node-up reloads a changed archive.
    await useRealNode(where?.sandboxDir);
    const admin = new Redis(redis.url);
    await admin.config('SET', 'requirepass', release.redisPassword); // after start: the harness's readiness PING has none
    admin.disconnect();
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name: 'redis' }, spec: { ports: [{ name: 'redis', port: 6379, targetPort: redis.port }] } },
    });
    release.apply({
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
      metadata: { name: 'redis-external', labels: { 'kubernetes.io/service-name': 'redis' } },
      addressType: 'IPv4', endpoints: [{ addresses: [node.ip], conditions: { ready: true } }],
      ports: [{ name: 'redis', port: redis.port, protocol: 'TCP' }],
    });
    return release;
  }

  get redisPassword(): string {
    return `pw-${this.sb.prefix}`;
  }

  /** The chart's values for the scaled mode on the real node, before the test's own. */
  baseValues(): Record<string, unknown> {
    const node = realNode();
    return {
      mode: 'scaled',
      image: { repository: 'ripple.local/ripple', tag: RIPPLE_VERSION, pullPolicy: 'Never' },
      config: { watchNamespace: this.sb.namespace, prefix: this.sb.prefix.replace(/[^a-z0-9-]/g, '-') },
      redis: { deploy: false, url: `redis://:${this.redisPassword}@redis.${this.sb.namespace}.svc.cluster.local:6379` },
      opsToken: { value: 'ops-token-for-the-real-node-test' },
      nodeSelector: { 'kubernetes.io/hostname': node.name },
      tolerations: [node.toleration],
      resources: { requests: { cpu: '20m', memory: '64Mi' }, limits: { memory: '512Mi' } },
    };
  }

  /** `helm upgrade --install --wait` with the base values and then `values`; returns how long it took (ms). */
  install(values: Record<string, unknown>): number {
    const file = path.join(this.work, 'values.json');
    writeFileSync(path.join(this.work, 'base.json'), JSON.stringify(this.baseValues()));
    writeFileSync(file, JSON.stringify(values));
    const started = Date.now();
    ok(
      this.helm(['upgrade', '--install', this.name, path.join(root, 'charts', 'ripple'), '-n', this.sb.namespace, '-f', path.join(this.work, 'base.json'), '-f', file, '--wait', '--timeout', '5m']),
      'helm upgrade --install',
    );
    return Date.now() - started;
  }

  /** The release's name for one of its objects, as the chart names them. */
  object(suffix: string): string {
    return `${this.name}-ripple-${suffix}`;
  }

  kubectl(args: string[]): Run {
    return this.run(path.join(bin, 'kubectl'), ['--kubeconfig', this.kubeconfig, '-n', this.sb.namespace, ...args]);
  }

  apply(object: Record<string, unknown>): void {
    const file = path.join(this.work, 'object.json');
    writeFileSync(file, JSON.stringify(object));
    ok(this.kubectl(['apply', '-f', file]), `kubectl apply ${JSON.stringify(object).slice(0, 80)}`);
  }

  async uninstall(): Promise<void> {
    this.helm(['uninstall', this.name, '-n', this.sb.namespace, '--wait', '--timeout', '2m']);
    await this.redis.stop();
    rmSync(this.work, { recursive: true, force: true });
  }

  private helm(args: string[]): Run {
    return this.run(path.join(bin, 'helm'), ['--kubeconfig', this.kubeconfig, ...args]);
  }

  private run(cmd: string, args: string[]): Run {
    const env = { ...process.env, HELM_CACHE_HOME: path.join(this.work, 'cache'), HELM_CONFIG_HOME: path.join(this.work, 'config'), HELM_DATA_HOME: path.join(this.work, 'data') };
    const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env });
    return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
  }
}
