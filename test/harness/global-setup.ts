import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { startControlPlane } from '../../sandbox/control-plane.js';
import { startRedis, type RedisServer } from '../../sandbox/redis.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    redisUrl: string;
    /** The sandbox's state dir when the harness runs Ripple's own sandbox (tests restart its parts). */
    sandboxDir: string;
    /** etcd's client URL in that sandbox ('' when the cluster was given from outside). */
    etcdUrl: string;
  }
}

/**
 * Brings up one real control plane and one real Redis for the whole run, or adopts running ones
 * (RIPPLE_TEST_KUBECONFIG, REDIS_URL), installs Ripple's CRDs, and tears down only what it started.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const log = (line: string) => console.error(line);
  const controlPlane = await startControlPlane({ kubeconfig: process.env.RIPPLE_TEST_KUBECONFIG, log, realNode: process.env.RIPPLE_REAL_NODE === '1' });
  // Vitest runs no teardown when setup throws: stop here what this setup started (stop() leaves alone
  // a control plane or Redis that was already running).
  let redis: RedisServer;
  try {
    redis = await startRedis({ log });
  } catch (err) {
    await controlPlane.stop();
    throw err;
  }
  try {
    installCrds(controlPlane.kubeconfig);
  } catch (err) {
    await redis.stop();
    await controlPlane.stop();
    throw err;
  }
  project.provide('kubeconfig', controlPlane.kubeconfig);
  project.provide('redisUrl', redis.url);
  const own = !process.env.RIPPLE_TEST_KUBECONFIG;
  const sandboxDir = own ? path.dirname(controlPlane.kubeconfig) : '';
  project.provide('sandboxDir', sandboxDir);
  project.provide('etcdUrl', own ? readEtcdUrl(sandboxDir) : '');
  return async () => {
    await redis.stop();
    await controlPlane.stop();
  };
}

function readEtcdUrl(dir: string): string {
  const env = readFileSync(path.join(dir, 'env'), 'utf8');
  return /^RIPPLE_SANDBOX_ETCD=(.*)$/m.exec(env)?.[1] ?? '';
}

function installCrds(kubeconfig: string): void {
  const dir = path.join(root, 'infra', 'crds');
  if (!existsSync(dir) || readdirSync(dir).length === 0) return;
  const kubectl = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
  const args = ['--kubeconfig', kubeconfig, 'apply', '--server-side', '--force-conflicts', '-f', dir];
  const applied = spawnSync(existsSync(kubectl) ? kubectl : 'kubectl', args, { encoding: 'utf8' });
  if (applied.status !== 0) throw new Error(`installing CRDs from ${dir} failed: ${applied.stderr}`);
  // `kubectl wait` fails at once ("status.conditions accessor error") on a CRD whose status the API server has
  // not written yet, which a fresh sandbox's large CRDs hit: ask again until the deadline.
  const deadline = Date.now() + 90_000;
  for (;;) {
    const established = spawnSync(
      existsSync(kubectl) ? kubectl : 'kubectl',
      ['--kubeconfig', kubeconfig, 'wait', '--for=condition=Established', 'crd', '--all', '--timeout=10s'],
      { encoding: 'utf8' },
    );
    if (established.status === 0) return;
    if (Date.now() > deadline) throw new Error(`CRDs did not become Established within 90 s: ${established.stderr}`);
    spawnSync('sleep', ['1']);
  }
}
