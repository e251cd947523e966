import { AppsV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTROL_LABEL, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { generateCa } from '../../runtime/webhook/certs.js';
import { startTestWebhook, type TestWebhook } from '../fixtures/ops-lifecycle-webhook.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const gatesOf = (p: V1Pod) => (p.spec?.readinessGates ?? []).map((g) => g.conditionType);

// Admission as a function: ops-lifecycle's Pod-CREATE webhook, served by Ripple's webhook runtime over HTTPS
// with its own CA, registered by URL on the sandbox's kube-apiserver (which verifies the certificate).
describe('ops-lifecycle webhook: the readiness gate at Pod CREATE', () => {
  let sb: TestSandbox;
  let hook: TestWebhook;

  beforeAll(async () => {
    sb = await openSandbox('opslc-hook');
    hook = await startTestWebhook(sb);
  });
  afterAll(async () => {
    await hook?.stop();
    await sb?.cleanup();
  });

  async function podsOf(app: string): Promise<V1Pod[]> {
    return (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `app=${app}` })).items;
  }

  async function createDeployment(name: string, labels: Record<string, string>): Promise<void> {
    await sb.kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: sb.namespace,
      body: {
        metadata: { name },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: name } },
          template: { metadata: { labels: { app: name, ...labels } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } },
        },
      },
    });
  }

  it('a plain Deployment with the control label gets the service-ready gate on its Pods; one without does not', async () => {
    // The registration reaches the API server's webhook informer asynchronously: wait until a probe Pod is mutated.
    await waitFor('the webhook to be active', 30_000, async () => {
      const name = `probe-${Date.now()}`;
      const created = await sb.core.createNamespacedPod({
        namespace: sb.namespace,
        body: { metadata: { name, labels: { [CONTROL_LABEL]: 'true' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } },
      });
      await sb.core.deleteNamespacedPod({ name, namespace: sb.namespace, gracePeriodSeconds: 0 });
      return gatesOf(created).includes(SERVICE_READY_CONDITION);
    }, 500);

    await createDeployment('controlled', { [CONTROL_LABEL]: 'true' });
    await createDeployment('plain', {});
    const controlled = await waitFor('2 Pods of the controlled Deployment', 60_000, async () => {
      const pods = await podsOf('controlled');
      return pods.length === 2 ? pods : undefined;
    });
    for (const p of controlled) expect(gatesOf(p)).toEqual([SERVICE_READY_CONDITION]);
    const plain = await waitFor('2 Pods of the plain Deployment', 60_000, async () => {
      const pods = await podsOf('plain');
      return pods.length === 2 ? pods : undefined;
    });
    for (const p of plain) expect(gatesOf(p)).toEqual([]);
  });

  it('the API server verifies the serving certificate: a registration trusting another CA refuses the Pod', async () => {
    const stranger = await generateCa(1, 'not-ripple');
    await hook.register(stranger.certPem);
    const err = await waitFor('a Pod create refused for an untrusted certificate', 30_000, async () => {
      try {
        const name = `untrusted-${Date.now()}`;
        await sb.core.createNamespacedPod({
          namespace: sb.namespace,
          body: { metadata: { name, labels: { [CONTROL_LABEL]: 'true' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } },
        });
        await sb.core.deleteNamespacedPod({ name, namespace: sb.namespace, gracePeriodSeconds: 0 });
        return undefined;
      } catch (e) {
        return String(e instanceof Error ? e.message : e);
      }
    }, 500);
    expect(err, err).toMatch(/x509|certificate/i);
    expect(err).toContain('pod-readiness-gate.ops-lifecycle.ripple.dev');
    await hook.register();
  });

  it('rotation: a new CA and serving certificate are registered and served without a restart', async () => {
    const before = hook.server.servingCertificatePem();
    await hook.server.rotate({ ca: true });
    expect(hook.server.servingCertificatePem()).not.toBe(before);
    // The bundle trusts both CAs during the switch.
    expect(hook.server.caBundlePem().match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    const pod = await waitFor('a Pod mutated through the renewed certificate', 30_000, async () => {
      const name = `after-rotation-${Date.now()}`;
      try {
        return await sb.core.createNamespacedPod({
          namespace: sb.namespace,
          body: { metadata: { name, labels: { [CONTROL_LABEL]: 'true' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } },
        });
      } catch {
        return undefined;
      }
    }, 500);
    expect(gatesOf(pod)).toEqual([SERVICE_READY_CONDITION]);
  });
});
