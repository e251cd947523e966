import { ApiextensionsV1Api } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definition } from '../../functions/reconcile-autoscaler/definition.js';
import { FUNCTION_NAME } from '../../functions/reconcile-autoscaler/keys.js';
import { forgetVariant, publishSeries } from '../../functions/reconcile-autoscaler/state.js';
import { plainStateWriter } from '../../queue/fenced-write.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { collectionPath, objectPath, Resources, type ResourceRef } from '../../kube/resources.js';
import { parseObjectKey } from '../../queue/keys.js';
import { QueueMetrics } from '../../queue/metrics.js';
import { eventRequestsKey } from '../../runtime/event-sink.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { mapToSelf } from '../../watcher/mappers.js';
import { Watcher } from '../../watcher/watcher.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { autoscalerEnv, createDeployment, createVA, deleteDeployment, metricValue, upsertConfigMap } from './autoscaler-helpers.js';

const SM_CRD = 'servicemonitors.monitoring.coreos.com';
const SAT = 'saturation-scaling-config';
const CTRL = 'workload-variant-autoscaler-variantautoscaling-config';
const SM = 'workload-variant-autoscaler-controller-manager-metrics-monitor';

/** Prometheus Operator's CRD, reduced to what this test needs, installed only when the sandbox has none. */
const serviceMonitorCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: SM_CRD },
  spec: {
    group: 'monitoring.coreos.com',
    names: { kind: 'ServiceMonitor', listKind: 'ServiceMonitorList', plural: 'servicemonitors', singular: 'servicemonitor' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } },
      },
    ],
  },
};

interface Enqueued {
  kind: string;
  event: string;
  key: string;
}

describe('reconcile-autoscaler triggers against real watch events (seed 003)', () => {
  let sb: TestSandbox;
  let createdCrd = false;
  const log = createLogger('autoscaler-triggers', process.env.LOG_LEVEL ?? 'warn');

  beforeAll(async () => {
    sb = await openSandbox('as-trig');
    const ext = sb.kc.makeApiClient(ApiextensionsV1Api);
    try {
      await ext.readCustomResourceDefinition({ name: SM_CRD });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
      await kubeRequest(sb.kc, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { method: 'POST', body: serviceMonitorCrd });
      createdCrd = true;
    }
    await waitFor('the ServiceMonitor CRD to be served', 30_000, async () => {
      try {
        await kubeRequest(sb.kc, collectionPath(Resources.serviceMonitor, sb.namespace));
        return true;
      } catch {
        return false;
      }
    });
  });

  afterAll(async () => {
    await sb?.cleanup();
    if (createdCrd) await sb.kc.makeApiClient(ApiextensionsV1Api).deleteCustomResourceDefinition({ name: SM_CRD }).catch(() => undefined);
  });

  const serviceMonitor = (name: string) => ({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name, namespace: sb.namespace },
    spec: { selector: { matchLabels: { 'control-plane': 'controller-manager' } }, endpoints: [{ port: 'https', path: '/metrics' }] },
  });
  const mergePatch = (ref: ResourceRef, name: string, body: unknown) =>
    kubeRequest(sb.kc, objectPath(ref, sb.namespace, name), { method: 'PATCH', body, contentType: 'application/merge-patch+json' });
  const remove = (ref: ResourceRef, name: string) => kubeRequest(sb.kc, objectPath(ref, sb.namespace, name), { method: 'DELETE' });

  it('enqueues exactly what the seed allows, per resource type, and nothing for what it blocks', async () => {
    const def = definition({ ...process.env, ...autoscalerEnv(sb) });
    const recorded: Enqueued[] = [];
    const watcher = new Watcher({
      kc: sb.kc,
      functions: [def],
      enqueue: async (_fn, key, reason) => {
        const [kind = '', event = ''] = reason.split(':');
        recorded.push({ kind, event, key });
      },
      isLeader: () => true,
      log,
      namespace: sb.namespace,
    });
    watcher.start();
    const ns = sb.namespace;
    const seen = (kind: string, event: string, key: string) =>
      waitFor(`${kind} ${event} → ${key}`, 20_000, async () => recorded.some((r) => r.kind === kind && r.event === event && r.key === key));
    try {
      await watcher.waitForSync(30_000);

      // VariantAutoscaling: Create ✅; Update ❌ (spec and status alike); Delete ❌ (below).
      await createVA(sb, 'va-a', { target: 'llama', model: 'meta/llama-3.1-8b' });
      await seen('VariantAutoscaling', 'create', `${ns}/va-a`);
      await mergePatch(Resources.variantAutoscaling, 'va-a', { spec: { variantCost: '42.0' } });
      await mergePatch(Resources.variantAutoscaling, 'va-a', { metadata: { labels: { touched: 'yes' } } });

      // Deployment: Create ✅ mapped to the VA naming it; Update ❌ (ours and the controllers' status updates).
      await createDeployment(sb, 'llama', 1);
      await seen('Deployment', 'create', `${ns}/va-a`);
      await mergePatch(Resources.deployment, 'llama', { metadata: { labels: { touched: 'yes' } } });
      await mergePatch(Resources.deployment, 'llama', { spec: { replicas: 2 } });
      await createDeployment(sb, 'unrelated', 1); // no VA names it: nothing to enqueue

      // ConfigMaps: the two watched names Create/Update ✅ (→ @config, no VA), Delete ❌; any other name ❌.
      await upsertConfigMap(sb, SAT, { default: 'kvCacheThreshold: 0.8' });
      await seen('ConfigMap', 'create', '@config');
      await upsertConfigMap(sb, SAT, { default: 'kvCacheThreshold: 0.75' });
      await seen('ConfigMap', 'update', '@config');
      await upsertConfigMap(sb, 'some-other-config', { a: '1' });
      await upsertConfigMap(sb, 'some-other-config', { a: '2' });
      await remove(Resources.configMap, 'some-other-config');
      await remove(Resources.configMap, SAT);
      await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '60s' });

      // ServiceMonitor: Create processed (nothing to do); plain Update ❌; Update setting deletionTimestamp ✅; Delete ✅.
      const created = z.object({ metadata: z.object({ uid: z.string() }) }).parse(
        await kubeRequest(sb.kc, collectionPath(Resources.serviceMonitor, ns), { method: 'POST', body: serviceMonitor(SM) }),
      );
      await kubeRequest(sb.kc, collectionPath(Resources.serviceMonitor, ns), { method: 'POST', body: serviceMonitor('another-monitor') });
      await mergePatch(Resources.serviceMonitor, SM, { metadata: { labels: { touched: 'yes' }, finalizers: ['ripple.test/hold'] } });
      await remove(Resources.serviceMonitor, 'another-monitor');
      await remove(Resources.serviceMonitor, SM); // held by the finalizer: an Update with deletionTimestamp
      const smKey = `@service-monitor/${created.metadata.uid}`;
      await seen('ServiceMonitor', 'update', smKey);
      await mergePatch(Resources.serviceMonitor, SM, { metadata: { finalizers: null } });
      await seen('ServiceMonitor', 'delete', smKey);

      // Deployment Delete ✅ (before the VA goes, so the VA still names it); VA Delete ❌.
      await deleteDeployment(sb, 'llama');
      await seen('Deployment', 'delete', `${ns}/va-a`);
      await remove(Resources.variantAutoscaling, 'va-a');

      // Generic ❌ everywhere: a new leader's replay of every store enqueues nothing.
      const before = recorded.length;
      expect(await watcher.replayAll()).toBeGreaterThan(0);
      expect(recorded.length).toBe(before);

      // Fences: one allowed event per stream after everything above; watch streams are ordered, so
      // once a fence is recorded every earlier (blocked) event of its type has been through the predicates.
      await createVA(sb, 'fence', { target: 'fence-target', model: 'fence' });
      await seen('VariantAutoscaling', 'create', `${ns}/fence`);
      await createDeployment(sb, 'fence-target', 1);
      await seen('Deployment', 'create', `${ns}/fence`);
      await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '30s' });
      await waitFor('the ConfigMap fence', 20_000, async () => recorded.filter((r) => r.kind === 'ConfigMap' && r.event === 'update').length === 2);

      const byKind = (kind: string) => recorded.filter((r) => r.kind === kind).map((r) => `${r.event} ${r.key}`);
      expect(byKind('VariantAutoscaling')).toEqual([`create ${ns}/va-a`, `create ${ns}/fence`]);
      expect(byKind('Deployment')).toEqual([`create ${ns}/va-a`, `delete ${ns}/va-a`, `create ${ns}/fence`]);
      expect(byKind('ConfigMap')).toEqual(['create @config', 'update @config', 'create @config', 'update @config']);
      expect(byKind('ServiceMonitor')).toEqual([`update ${smKey}`, `delete ${smKey}`]);
      // No key but VAs and the function's own keys is ever enqueued.
      expect(recorded.every((r) => r.key.startsWith(`${ns}/`) || r.key.startsWith('@'))).toBe(true);

      // The ServiceMonitor key's handler: one Warning ServiceMonitorDeleted, however often it runs.
      const host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: [def], log, env: { ...process.env, ...autoscalerEnv(sb) } });
      try {
        for (let i = 0; i < 2; i++) await def.reconcile({ key: smKey, reason: 'test', ...parseObjectKey(smKey) }, host.context(log));
        const requests = (await sb.redis.lrange(eventRequestsKey(sb.prefix, `${ns}/ServiceMonitor/${SM}`), 0, -1)).map((t) => JSON.parse(t) as { type: string; reason: string; message: string; involvedObject: { uid?: string } });
        expect(requests).toHaveLength(1);
        expect(requests[0]).toMatchObject({ type: 'Warning', reason: 'ServiceMonitorDeleted', involvedObject: { uid: created.metadata.uid } });
        expect(requests[0]?.message).toContain(`ServiceMonitor ${ns}/${SM} is being deleted`);
      } finally {
        await host.close();
      }
    } finally {
      await watcher.stop();
    }
  });

  it('an optional trigger on a resource the API server does not serve syncs as empty and stays ready', async () => {
    const absent: ResourceRef = { group: 'absent.ripple.dev', version: 'v1', kind: 'Nothing', plural: 'nothings', namespaced: true };
    const fn: FunctionDefinition = { name: 'optional-probe', triggers: [{ resource: absent, optional: true, map: mapToSelf }], reconcile: async () => undefined };
    const watcher = new Watcher({ kc: sb.kc, functions: [fn], enqueue: async () => undefined, isLeader: () => true, log, namespace: sb.namespace });
    watcher.start();
    try {
      await watcher.waitForSync(10_000);
      expect(watcher.ready(60_000)).toBe(true);
      expect(watcher.health()[0]).toMatchObject({ synced: true, up: true });
    } finally {
      await watcher.stop();
    }
  });

  it('the host registers the wva_* gauges on the process registry; they read Redis at scrape time', async () => {
    const registry = new Registry();
    const env = { ...process.env, ...autoscalerEnv(sb) };
    const host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: [definition(env)], log, env, metrics: new QueueMetrics(registry) });
    // Outside any claim, as another process's tooling would write: plain writes, no fence.
    const stateIO = { redis: sb.redis, prefix: sb.prefix, state: plainStateWriter(sb.redis, sb.prefix, FUNCTION_NAME) };
    try {
      // variant_name is the VA's name (WVA since v0.5.1), not its Deployment's.
      const labels = { variant_name: 'va-llama', namespace: sb.namespace, accelerator_type: 'A100' };
      expect(await registry.getSingleMetricAsString('wva_desired_replicas')).toContain('# TYPE wva_desired_replicas gauge');
      expect(await metricValue(registry, 'wva_desired_replicas', labels)).toBeUndefined();
      // Written by "another process": this process's registry shows it at the next scrape.
      await publishSeries(stateIO, `${sb.namespace}/va-llama`, { variantName: 'llama', namespace: sb.namespace, accelerator: 'A100', current: 2, desired: 3 });
      expect(await metricValue(registry, 'wva_desired_replicas', labels)).toBe(3);
      expect(await metricValue(registry, 'wva_optimized_replicas', labels)).toBe(3);
      expect(await metricValue(registry, 'wva_current_replicas', labels)).toBe(2);
      expect(await metricValue(registry, 'wva_desired_ratio', labels)).toBe(1.5);
      await forgetVariant(stateIO, `${sb.namespace}/va-llama`);
      expect(await metricValue(registry, 'wva_desired_replicas', labels)).toBeUndefined();
    } finally {
      await host.close();
    }
  });
});
