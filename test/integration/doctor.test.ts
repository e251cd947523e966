import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdmissionregistrationV1Api, AppsV1Api, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { formatFindings } from '../../cli/doctor/findings.js';
import { freePort } from '../../sandbox/free-port.js';
import { createMs, msManifest } from '../fixtures/modelserving-fixtures.js';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

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

const parseFindings = (out: string) => z.object({ findings: z.array(findingSchema) }).parse(JSON.parse(out)).findings;

let sb: TestSandbox;
let prometheus: RunningPrometheus | undefined;
const suffix = Math.random().toString(36).slice(2, 8);
const webhookName = `kthena-like-${suffix}`;
/** The cluster-wide role this test grants its ServiceAccount (named apart from every other test's). */
const clusterRoleName = `doctor-test-watcher-${suffix}`;
beforeAll(async () => {
  sb = await openSandbox('doctor');
});
afterAll(async () => {
  await sb.kc.makeApiClient(AdmissionregistrationV1Api).deleteValidatingWebhookConfiguration({ name: webhookName }).catch(() => undefined);
  const rbac = sb.kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.deleteClusterRoleBinding({ name: clusterRoleName }).catch(() => undefined);
  await rbac.deleteClusterRole({ name: clusterRoleName }).catch(() => undefined);
  await prometheus?.stop();
  await sb.cleanup();
});

/** The rules of the watcher's ClusterRole or Role as infra/deploy/rbac (and the chart) grant them. */
function watcherRules(kind: 'ClusterRole' | 'Role'): V1PolicyRule[] {
  const docs = parseAllDocuments(readFileSync(path.join(root, 'infra/deploy/rbac/watcher/rbac.yaml'), 'utf8')).map((d) => d.toJS() as unknown);
  const role = z.array(z.object({ kind: z.string(), rules: z.array(z.object({ apiGroups: z.array(z.string()), resources: z.array(z.string()), verbs: z.array(z.string()), resourceNames: z.array(z.string()).optional() })).optional() }).passthrough()).parse(docs.filter(Boolean)).find((d) => d.kind === kind);
  return role?.rules ?? [];
}

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
    console.log(`ripple doctor on the sandbox (before the fixes):\n${formatFindings(found)}`);

    // The fixes doctor printed, then a ModelServing write goes through and doctor no longer names them.
    await admission.deleteValidatingWebhookConfiguration({ name: webhookName });
    const dep = await apps.readNamespacedDeployment({ name: 'kthena-controller-manager', namespace: sb.namespace });
    await apps.replaceNamespacedDeployment({ name: 'kthena-controller-manager', namespace: sb.namespace, body: { ...dep, spec: { ...dep.spec!, replicas: 0 } } });
    await createMs(sb, msManifest('accepted', sb.namespace));
    const after = z.object({ findings: z.array(findingSchema) }).parse(JSON.parse((await doctor(['--kubeconfig', inject('kubeconfig'), '-o', 'json'])).out)).findings;
    expect(after.filter((f) => f.check.includes(webhookName) || f.check.includes('kthena-controller-manager'))).toEqual([]);
  });

  it('names each permission a ServiceAccount lacks of the roles Ripple needs (watcher without EndpointSlices), through impersonation, and passes once it has them all', async () => {
    const rbac = sb.kc.makeApiClient(RbacAuthorizationV1Api);
    const account = 'doctor-watcher';
    await sb.core.createNamespacedServiceAccount({ namespace: sb.namespace, body: { metadata: { name: account } } });
    const all = watcherRules('ClusterRole');
    const withoutSlices = all.filter((r) => !r.resources?.includes('endpointslices'));
    expect(withoutSlices.length).toBe(all.length - 1);
    await rbac.createClusterRole({ body: { metadata: { name: clusterRoleName }, rules: withoutSlices } });
    await rbac.createClusterRoleBinding({ body: { metadata: { name: clusterRoleName }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRoleName }, subjects: [{ kind: 'ServiceAccount', name: account, namespace: sb.namespace }] } });
    await rbac.createNamespacedRole({ namespace: sb.namespace, body: { metadata: { name: 'ripple-watcher' }, rules: watcherRules('Role') } });
    await rbac.createNamespacedRoleBinding({ namespace: sb.namespace, body: { metadata: { name: 'ripple-watcher' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ripple-watcher' }, subjects: [{ kind: 'ServiceAccount', name: account, namespace: sb.namespace }] } });
    const user = `system:serviceaccount:${sb.namespace}:${account}`;
    const args = ['--kubeconfig', inject('kubeconfig'), '--namespace', sb.namespace, '--identity', 'ripple-watcher', '--as', user, '-o', 'json'];

    const lacking = await doctor(args);
    expect(lacking.err).toBe('');
    expect(lacking.code).toBe(1);
    const denied = parseFindings(lacking.out).find((f) => f.check === 'RBAC of ripple-watcher');
    expect(denied, lacking.out).toMatchObject({ ok: false });
    expect(denied?.message).toBe(`${user} may not: list, watch discovery.k8s.io/endpointslices`);
    expect(denied?.fix).toContain('infra/deploy/rbac/watcher/rbac.yaml');
    console.log(`ripple doctor as a watcher without EndpointSlices:\n${formatFindings(parseFindings(lacking.out))}`);

    // The missing rule granted: RBAC's authorizer sees it within moments.
    await rbac.replaceClusterRole({ name: clusterRoleName, body: { metadata: { name: clusterRoleName }, rules: all } });
    const granted = await waitFor('doctor to find the watcher\'s permissions complete', 60_000, async () => {
      const f = parseFindings((await doctor(args)).out).find((x) => x.check === 'RBAC of ripple-watcher');
      return f?.ok ? f : undefined;
    }, 500);
    expect(granted.message).toMatch(new RegExp(`^${user} may make all \\d+ requests ripple-watcher's roles grant`));
  });

  it("says Prometheus is unreachable at the URL the autoscaler's controller ConfigMap names, and passes against a real Prometheus", async () => {
    const closed = await freePort();
    const configMap = 'wva-variantautoscaling-config';
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: configMap }, data: { PROMETHEUS_BASE_URL: `http://127.0.0.1:${closed}` } } });
    const args = ['--kubeconfig', inject('kubeconfig'), '--namespace', sb.namespace, '-o', 'json'];

    const down = await doctor(args);
    expect(down.err).toBe('');
    expect(down.code).toBe(1);
    const unreachable = parseFindings(down.out).find((f) => f.check === 'Prometheus');
    expect(unreachable, down.out).toMatchObject({ ok: false });
    expect(unreachable?.message).toBe(`cannot reach Prometheus at http://127.0.0.1:${closed} (PROMETHEUS_BASE_URL of ConfigMap ${sb.namespace}/${configMap}): connect ECONNREFUSED 127.0.0.1:${closed}`);
    expect(unreachable?.fix).toContain(`PROMETHEUS_BASE_URL in ConfigMap ${sb.namespace}/${configMap}`);
    console.log(`ripple doctor with Prometheus down:\n${formatFindings(parseFindings(down.out))}`);

    prometheus = await startPrometheus({ targets: [`127.0.0.1:${closed}`] });
    await sb.core.replaceNamespacedConfigMap({ name: configMap, namespace: sb.namespace, body: { metadata: { name: configMap }, data: { PROMETHEUS_BASE_URL: prometheus.url } } });
    const up = parseFindings((await doctor(args)).out).find((f) => f.check === 'Prometheus');
    expect(up).toMatchObject({ ok: true });
    expect(up?.message).toMatch(new RegExp(`^${prometheus.url.replace(/\./g, '\\.')} \\(PROMETHEUS_BASE_URL of ConfigMap ${sb.namespace}/${configMap}\\) answered a query in \\d+ ms$`));
  });
});
