import { randomBytes } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { loadKubeConfig } from '../../kube/config.js';

/** The real cluster and Redis the global setup brought up, with a namespace and key prefix of this test's own. */
export interface TestSandbox {
  kc: KubeConfig;
  core: CoreV1Api;
  namespace: string;
  redisUrl: string;
  /** Prefix for every Redis key and BullMQ queue this test makes, so tests never see each other's state. */
  prefix: string;
  redis: Redis;
  cleanup(): Promise<void>;
}

/** `where`: the cluster and Redis outside a test run (a bench); by default the global setup's. */
export async function openSandbox(label: string, where?: { kubeconfig: string; redisUrl: string }): Promise<TestSandbox> {
  const kc = loadKubeConfig({ kind: 'kubeconfig', path: where?.kubeconfig ?? inject('kubeconfig') });
  const core = kc.makeApiClient(CoreV1Api);
  const suffix = randomBytes(3).toString('hex');
  const namespace = `t-${label}-${suffix}`.toLowerCase().slice(0, 63);
  await core.createNamespace({ body: { metadata: { name: namespace, labels: { 'ripple.dev/test': 'true' } } } });
  await waitFor(`the default ServiceAccount in ${namespace}`, 30_000, async () => {
    try {
      await core.readNamespacedServiceAccount({ name: 'default', namespace });
      return true;
    } catch {
      return false;
    }
  });
  const redisUrl = where?.redisUrl ?? inject('redisUrl');
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const prefix = `ripple-test-${label}-${suffix}`;
  return {
    kc,
    core,
    namespace,
    redisUrl,
    prefix,
    redis,
    cleanup: async () => {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}

/** Polls until `check` returns a value (not undefined/false), or fails naming what it waited for. */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined | false>,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
