import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdmissionregistrationV1Api, AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createMs, msManifest } from '../fixtures/modelserving-fixtures.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// Issue 32, "A safe switch": `ripple doctor` against the sandbox's real API server and Redis, with what a
// cluster running Kthena has beside Ripple: Kthena's validating webhook (failurePolicy Fail, its service gone)
// and Kthena's controller Deployment still running. The webhook only covers this test's namespace, so other
// tests sharing the sandbox are not refused. The CRD part (a Kthena-shaped CRD that prunes Ripple's status)
// cannot run here: the CRDs are cluster-wide and shared by every test (cli/doctor/findings.test.ts has it).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const findingSchema = z.object({ check: z.string(), ok: z.boolean(), message: z.string(), fix: z.string().optional() });

function doctor(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'bin', 'ripple.js'), 'doctor', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out, err }));
  });
}

let sb: TestSandbox;
const webhookName = `kthena-like-${Math.random().toString(36).slice(2, 8)}`;
beforeAll(async () => {
  sb = await openSandbox('doctor');
});
afterAll(async () => {
  await sb.kc.makeApiClient(AdmissionregistrationV1Api).deleteValidatingWebhookConfiguration({ name: webhookName }).catch(() => undefined);
  await sb.cleanup();
});

describe('ripple doctor on the sandbox', () => {
  it("names Kthena's webhook and controller with the command that fixes each, and after the fixes finds no problem with them", async () => {
    const admission = sb.kc.makeApiClient(AdmissionregistrationV1Api);
    await admission.createValidatingWebhookConfiguration({
      body: {
        metadata: { name: webhookName },
        webhooks: [
          {
            name: 'validate.modelserving.volcano.sh',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Fail',
            clientConfig: { service: { namespace: sb.namespace, name: 'kthena-webhook', port: 443, path: '/validate' } },
            rules: [{ apiGroups: ['workload.serving.volcano.sh'], apiVersions: ['v1alpha1'], resources: ['modelservings'], operations: ['CREATE', 'UPDATE'] }],
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': sb.namespace } },
          },
        ],
      },
    });
    // What the issue describes: with the webhook's controller gone, every ModelServing write is refused.
    const refused = await createMs(sb, msManifest('refused', sb.namespace)).then(
      () => 'created',
      (e: unknown) => String(e),
    );
    expect(refused).toMatch(/failed calling webhook "validate\.modelserving\.volcano\.sh"/);
    const apps = sb.kc.makeApiClient(AppsV1Api);
    const labels = { app: 'kthena-controller-manager' };
    await apps.createNamespacedDeployment({
      namespace: sb.namespace,
      body: { metadata: { name: 'kthena-controller-manager' }, spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'manager', image: 'ghcr.io/volcano-sh/kthena-controller-manager:v1.0.0' }] } } } },
    });

    const before = await doctor(['--kubeconfig', inject('kubeconfig'), '--redis-url', sb.redisUrl, '-o', 'json']);
    expect(before.err).toBe('');
    expect(before.code).toBe(1);
    const found = z.object({ findings: z.array(findingSchema) }).parse(JSON.parse(before.out)).findings;
    const webhook = found.find((f) => f.check === `ValidatingWebhookConfiguration ${webhookName}`);
    expect(webhook).toMatchObject({ ok: false, fix: `remove it together with that controller: kubectl delete validatingwebhookconfiguration ${webhookName}` });
    expect(webhook?.message).toContain('(failurePolicy Fail) admits ModelServing writes');
    const controller = found.find((f) => f.check === `Deployment ${sb.namespace}/kthena-controller-manager`);
    expect(controller).toMatchObject({ ok: false, fix: `scale it to zero before Ripple starts: kubectl -n ${sb.namespace} scale deployment kthena-controller-manager --replicas=0` });
    // The sandbox runs Ripple's own CRDs and a Redis that does not evict.
    for (const crd of ['modelservings.workload.serving.volcano.sh', 'variantautoscalings.llmd.ai']) expect(found.find((f) => f.check === `CRD ${crd}`)?.ok, crd).toBe(true);
    expect(found.find((f) => f.check === 'Redis maxmemory-policy')).toMatchObject({ ok: true, message: 'noeviction' });
    const text = await doctor(['--kubeconfig', inject('kubeconfig')]);
    console.log(`ripple doctor on the sandbox (before the fixes):\n${text.out}`);

    // The fixes doctor printed, then a ModelServing write goes through and doctor no longer names them.
    await admission.deleteValidatingWebhookConfiguration({ name: webhookName });
    const dep = await apps.readNamespacedDeployment({ name: 'kthena-controller-manager', namespace: sb.namespace });
    await apps.replaceNamespacedDeployment({ name: 'kthena-controller-manager', namespace: sb.namespace, body: { ...dep, spec: { ...dep.spec!, replicas: 0 } } });
    await createMs(sb, msManifest('accepted', sb.namespace));
    const after = z.object({ findings: z.array(findingSchema) }).parse(JSON.parse((await doctor(['--kubeconfig', inject('kubeconfig'), '-o', 'json'])).out)).findings;
    expect(after.filter((f) => f.check.includes(webhookName) || f.check.includes('kthena-controller-manager'))).toEqual([]);
  });
});
