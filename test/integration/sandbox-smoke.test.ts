import { AppsV1Api, Watch } from '@kubernetes/client-node';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// These prove that the parts under every other test are real: the scheduler, the controller-manager
// and KWOK turn a Deployment into Running/Ready pods; the garbage collector follows owner references;
// a client-node watch sees the apiserver's events; BullMQ talks to a real Redis.
describe('sandbox smoke', () => {
  let sb: TestSandbox;
  beforeAll(async () => {
    sb = await openSandbox('smoke');
  });
  afterAll(async () => {
    await sb.cleanup();
  });

  it('a Deployment becomes Available with Running/Ready pods', async () => {
    const apps = sb.kc.makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace: sb.namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
          },
        },
      },
    });
    const available = await waitFor('Deployment web to be Available', 60_000, async () => {
      const d = await apps.readNamespacedDeployment({ name: 'web', namespace: sb.namespace });
      const cond = d.status?.conditions?.find((c) => c.type === 'Available');
      return cond?.status === 'True' && d.status?.readyReplicas === 2 ? d : undefined;
    });
    expect(available.status?.availableReplicas).toBe(2);
    const pods = await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: 'app=web' });
    expect(pods.items).toHaveLength(2);
    for (const pod of pods.items) {
      expect(pod.spec?.nodeName).toMatch(/^kwok-node-/);
      expect(pod.status?.phase).toBe('Running');
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }
  });

  it('deleting an owner garbage-collects what it owns', async () => {
    const owner = await sb.core.createNamespacedConfigMap({
      namespace: sb.namespace,
      body: { metadata: { name: 'owner' }, data: { role: 'owner' } },
    });
    await sb.core.createNamespacedConfigMap({
      namespace: sb.namespace,
      body: {
        metadata: {
          name: 'owned',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid!, controller: true },
          ],
        },
      },
    });
    await sb.core.deleteNamespacedConfigMap({ name: 'owner', namespace: sb.namespace });
    const gone = await waitFor('the owned ConfigMap to be collected', 60_000, async () => {
      try {
        await sb.core.readNamespacedConfigMap({ name: 'owned', namespace: sb.namespace });
        return false;
      } catch (err) {
        return (err as { code?: number }).code === 404;
      }
    });
    expect(gone).toBe(true);
  });

  it('a client-node watch sees ADDED, MODIFIED and DELETED for ConfigMaps', async () => {
    const seen: string[] = [];
    const watch = new Watch(sb.kc);
    const req = await watch.watch(
      `/api/v1/namespaces/${sb.namespace}/configmaps`,
      { fieldSelector: 'metadata.name=watched' },
      (type: string) => seen.push(type),
      () => undefined,
    );
    try {
      await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'watched' }, data: { v: '1' } } });
      await sb.core.replaceNamespacedConfigMap({
        name: 'watched',
        namespace: sb.namespace,
        body: { metadata: { name: 'watched' }, data: { v: '2' } },
      });
      await sb.core.deleteNamespacedConfigMap({ name: 'watched', namespace: sb.namespace });
      await waitFor('three watch events', 15_000, async () => seen.length >= 3);
      expect(seen).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    } finally {
      req.abort();
    }
  });

  it('a BullMQ job round-trips through the harness Redis', async () => {
    const connection = new Redis(sb.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('smoke', { connection, prefix: sb.prefix });
    const events = new QueueEvents('smoke', { connection: connection.duplicate(), prefix: sb.prefix });
    const worker = new Worker<{ n: number }, number>('smoke', async (job) => job.data.n * 2, {
      connection: connection.duplicate(),
      prefix: sb.prefix,
    });
    try {
      await events.waitUntilReady();
      const job = await queue.add('double', { n: 21 });
      expect(await job.waitUntilFinished(events, 15_000)).toBe(42);
      // The job really went through this Redis: its key is under the test's prefix.
      expect(await sb.redis.exists(`${sb.prefix}:smoke:${job.id}`)).toBe(1);
    } finally {
      await worker.close();
      await events.close();
      await queue.close();
      connection.disconnect();
    }
  });
});
