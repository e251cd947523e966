import { ApiextensionsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definition } from '../../functions/reconcile-autoscaler/definition.js';
import { serviceMonitorKey } from '../../functions/reconcile-autoscaler/service-monitor.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../../kube/resources.js';
import { parseObjectKey } from '../../queue/keys.js';
import { eventRequestsKey } from '../../runtime/event-sink.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { autoscalerEnv } from './autoscaler-helpers.js';

const SM_CRD = 'servicemonitors.monitoring.coreos.com';
const SM = 'workload-variant-autoscaler-controller-manager-metrics-monitor';
const serviceMonitorCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: SM_CRD },
  spec: {
    group: 'monitoring.coreos.com',
    names: { kind: 'ServiceMonitor', listKind: 'ServiceMonitorList', plural: 'servicemonitors', singular: 'servicemonitor' },
    scope: 'Namespaced',
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } } }],
  },
};
const uidSchema = z.object({ metadata: z.object({ uid: z.string() }) });

// Issue 14 scenario 10: the ServiceMonitor key of a deletion runs after the object was already
// replaced (a new ServiceMonitor of the same name, another uid): Prometheus scrapes the new one, so
// no "Recreate the ServiceMonitor" warning. A deletion with nothing in its place still warns once.
describe('reconcile-autoscaler: a replaced ServiceMonitor is not reported deleted (issue 14 scenario 10)', () => {
  let sb: TestSandbox;
  let createdCrd = false;
  let host: FunctionHost;
  const log = createLogger('autoscaler-sm-replaced', process.env.LOG_LEVEL ?? 'warn');

  beforeAll(async () => {
    sb = await openSandbox('as-sm');
    try {
      await sb.kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: SM_CRD });
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
    const env = { ...process.env, ...autoscalerEnv(sb) };
    host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: [definition(env)], log, env });
  });

  afterAll(async () => {
    await host?.close();
    await sb?.cleanup();
    if (createdCrd) await sb.kc.makeApiClient(ApiextensionsV1Api).deleteCustomResourceDefinition({ name: SM_CRD }).catch(() => undefined);
  });

  const create = async () =>
    uidSchema.parse(
      await kubeRequest(sb.kc, collectionPath(Resources.serviceMonitor, sb.namespace), {
        method: 'POST',
        body: { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name: SM, namespace: sb.namespace }, spec: { endpoints: [{ port: 'https' }] } },
      }),
    ).metadata.uid;
  const remove = async () => {
    await kubeRequest(sb.kc, objectPath(Resources.serviceMonitor, sb.namespace, SM), { method: 'DELETE' });
    await waitFor('the ServiceMonitor to be gone', 20_000, async () => {
      try {
        await kubeRequest(sb.kc, objectPath(Resources.serviceMonitor, sb.namespace, SM));
        return false;
      } catch (err) {
        return isStatus(err, 404);
      }
    });
  };
  const run = async (uid: string) => {
    const key = serviceMonitorKey(uid);
    await definition({ ...process.env, ...autoscalerEnv(sb) }).reconcile({ key, reason: 'test', ...parseObjectKey(key) }, host.context(log));
  };
  const warnings = async () =>
    (await sb.redis.lrange(eventRequestsKey(sb.prefix, `${sb.namespace}/ServiceMonitor/${SM}`), 0, -1)).map((t) => JSON.parse(t) as { reason: string; involvedObject: { uid?: string } });

  it('deleted and already replaced when its key runs: no warning; the replacement deleted with nothing in its place: one', async () => {
    const first = await create();
    await remove();
    const second = await create();
    expect(second).not.toBe(first);
    await run(first);
    expect(await warnings()).toEqual([]);

    await remove();
    await run(second);
    const w = await warnings();
    expect(w).toHaveLength(1);
    expect(w[0]).toMatchObject({ reason: 'ServiceMonitorDeleted', involvedObject: { uid: second } });
  });
});
