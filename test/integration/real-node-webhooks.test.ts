import { AdmissionregistrationV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRACE_DELETE_ADAPTER, GRACE_DELETE_ANNOTATION } from '../../functions/ops-lifecycle/admission/grace-delete.js';
import { CONTROL_LABEL, Label, perIdKey, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { generateCa, issueServingCertificate, type CertificateAuthority } from '../../runtime/webhook/certs.js';
import { realNode } from '../../sandbox/real-node.js';
import { isReady } from '../fixtures/modelserving-fixtures.js';
import { goClient } from '../fixtures/ops-lifecycle-go-client.js';
import { createControlledPod, recordPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { RIPPLE_VERSION, RippleRelease } from '../harness/ripple-release.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// ops-lifecycle's admission webhooks installed by the chart (charts/ripple/templates/webhooks.yaml) as a
// function pod of Ripple's image on the real node: the real kube-apiserver resolves the registration's
// Service, dials it over TLS and verifies the pod's serving certificate against the caBundle from the values.
// The certificate is the "existing Secret + CA bundle" option (cert-manager is not built here); the pod
// serves whatever the Secret holds, so the TLS the API server verifies is the pod's own.
let sb: TestSandbox;
let release: RippleRelease;
let admission: AdmissionregistrationV1Api;
let ca: CertificateAuthority;

const SECRET = 'webhook-serving-tls';
const gatesOf = (p: V1Pod) => (p.spec?.readinessGates ?? []).map((g) => g.conditionType);

function webhookValues(caBundle: string, graceDelete = false): Record<string, unknown> {
  // all-in-one beside the webhook: two pods on 2 cores. The release reconciles only the test's namespace, so
  // the chart scopes the registration to it (a cluster-wide Fail gate would refuse other tests' Pods).
  // GraceDelete without a token: the sandbox's API server has no AdmissionConfiguration to send one with.
  return {
    mode: 'all-in-one',
    webhooks: { enabled: true, replicas: 1, certificate: { existingSecret: SECRET, caBundle }, ...(graceDelete ? { graceDelete: { enabled: true, allowUnauthenticated: true } } : {}) },
  };
}

/** The webhook pod now running (a changed value rolls it). */
async function webhookPod(): Promise<V1Pod> {
  const pods = (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `app.kubernetes.io/instance=${release.name},app.kubernetes.io/component=webhook` })).items;
  const running = pods.filter((p) => p.metadata?.deletionTimestamp === undefined && isReady(p));
  expect(running, 'one Ready webhook pod').toHaveLength(1);
  return running[0]!;
}

/** The webhook pod's /metrics, read the way the PodMonitor scrapes it: the container port named `ops`, by Pod IP. */
async function webhookMetrics(): Promise<string> {
  const pod = await webhookPod();
  const port = pod.spec?.containers[0]?.ports?.find((p) => p.name === 'ops')?.containerPort;
  expect(port, 'the webhook pod declares an ops port').toBeDefined();
  const answer = await fetch(`http://${pod.status?.podIP}:${port}/metrics`);
  expect(answer.status).toBe(200);
  return answer.text();
}

/** The value of one sample of an exposition text, by name and (a subset of) its labels; 0 when absent. */
function sampleOf(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const has = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    if (Object.entries(labels).every(([k, v]) => has[k] === v)) return Number(m[3]);
  }
  return 0;
}

/** A Pod the webhooks select (or not); only the webhook can have put the gate on it by the time create answers. */
async function createPod(name: string, controlled = true): Promise<V1Pod> {
  return sb.core.createNamespacedPod({
    namespace: sb.namespace,
    body: {
      metadata: { name, labels: controlled ? { [CONTROL_LABEL]: 'true' } : {} },
      spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
    },
  });
}
const deletePod = (name: string) => sb.core.deleteNamespacedPod({ name, namespace: sb.namespace, gracePeriodSeconds: 0 });
const errorText = (e: unknown) => String((e as { body?: unknown }).body ?? e);

describe('the chart’s admission webhooks as a function pod on the real node', () => {
  beforeAll(async () => {
    sb = await openSandbox('rn-hooks');
    admission = sb.kc.makeApiClient(AdmissionregistrationV1Api);
    release = await RippleRelease.prepare(sb, 'rw');
    // The serving certificate for the name the API server dials: <service>.<namespace>.svc.
    const service = release.object('ops-lifecycle-webhook');
    ca = await generateCa(1, 'rn-webhooks-ca');
    const serving = await issueServingCertificate(ca, [`${service}.${sb.namespace}.svc`, `${service}.${sb.namespace}.svc.cluster.local`], 1);
    await sb.core.createNamespacedSecret({
      namespace: sb.namespace,
      body: { metadata: { name: SECRET }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': serving.certPem, 'tls.key': serving.keyPem } },
    });
    const took = release.install(webhookValues(ca.certPem));
    console.log(`real-node webhooks: helm install --wait took ${(took / 1000).toFixed(1)} s`);
  }, 900_000);
  afterAll(async () => {
    await release?.uninstall();
    await sb?.cleanup();
  });

  it('runs the webhook pod of Ripple’s image on the real node, registered through its Service with the given CA', async () => {
    const pods = (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `app.kubernetes.io/instance=${release.name},app.kubernetes.io/component=webhook` })).items;
    expect(pods).toHaveLength(1);
    expect(isReady(pods[0]!), 'the webhook pod Ready (its HTTPS readiness probe)').toBe(true);
    expect(pods[0]!.spec?.automountServiceAccountToken, 'a pure webhook holds no API credentials').toBe(false);
    expect(pods[0]!.spec?.nodeName).toBe(realNode().name);
    expect(pods[0]!.status?.containerStatuses?.[0]?.image).toContain(`ripple.local/ripple:${RIPPLE_VERSION}`);
    const hooks = await admission.readMutatingWebhookConfiguration({ name: release.object('ops-lifecycle') });
    expect(hooks.webhooks?.map((w) => [w.name, w.failurePolicy])).toEqual([
      ['pod-readiness-gate.ops-lifecycle.ripple.dev', 'Fail'],
      ['pod-lifecycle.ops-lifecycle.ripple.dev', 'Ignore'],
    ]);
    for (const w of hooks.webhooks ?? []) {
      expect(w.clientConfig.service, w.name).toMatchObject({ name: release.object('ops-lifecycle-webhook'), namespace: sb.namespace, port: 443 });
      expect(w.clientConfig.url, w.name).toBeUndefined();
      expect(Buffer.from(w.clientConfig.caBundle ?? '', 'base64').toString('utf8'), w.name).toBe(ca.certPem);
      expect(w.namespaceSelector, w.name).toEqual({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [sb.namespace] }] });
    }
  });

  it('the API server calls the pod over verified TLS: a controlled Pod is created with the gate, and a Go client’s Begin is answered in the same write', async () => {
    // The registration reaches the API server's webhook informer asynchronously; until then a Pod has no gate.
    await waitFor('the webhook to put the gate on a probe Pod', 60_000, async () => {
      const name = `probe-${Date.now()}`;
      const created = await createPod(name).catch(() => undefined);
      if (created) await deletePod(name);
      return created !== undefined && gatesOf(created).includes(SERVICE_READY_CONDITION);
    }, 500);
    const pod = await createPod('gated');
    expect(gatesOf(pod), 'added at CREATE by pod-readiness-gate').toEqual([SERVICE_READY_CONDITION]);
    const uncontrolled = await createPod('uncontrolled', false);
    expect(gatesOf(uncontrolled), 'outside the objectSelector').toEqual([]);
    // pod-lifecycle (UPDATE): kuperator's Begin answered with pre-check in the same write.
    const begun = await goClient(sb).begin('gated', { id: 'chart', type: 'update' });
    expect(begun?.metadata?.labels).toHaveProperty(perIdKey('preCheck', 'chart'));
  });

  it('the webhook pod exports its admission metrics on its ops port: the reviews the API server just sent, by webhook, operation and result', async () => {
    const text = await webhookMetrics();
    const gate = 'pod-readiness-gate.ops-lifecycle.ripple.dev';
    const lifecycle = 'pod-lifecycle.ops-lifecycle.ripple.dev';
    // The gate added at CREATE (the probes and `gated`), the Begin answered with pre-check.
    expect(sampleOf(text, 'ripple_admission_reviews_total', { webhook: gate, operation: 'CREATE', result: 'patched' })).toBeGreaterThanOrEqual(2);
    expect(sampleOf(text, 'ripple_admission_reviews_total', { webhook: lifecycle, operation: 'UPDATE', result: 'patched' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'ripple_admission_review_duration_seconds_count', { webhook: gate, operation: 'CREATE' })).toBeGreaterThanOrEqual(2);
    expect(sampleOf(text, 'process_resident_memory_bytes', {}), 'the process metrics every Ripple pod exports').toBeGreaterThan(0);
  });

  it('with webhooks.graceDelete.enabled a DELETE of a serving controlled Pod is refused, taken through the lifecycle, and the lifecycle deletes the Pod', async () => {
    const took = release.install(webhookValues(ca.certPem, true));
    console.log(`real-node webhooks: helm upgrade to GraceDelete took ${(took / 1000).toFixed(1)} s`);
    const ref = await createControlledPod(sb, 'doomed');
    await waitServing(sb, ref);
    // The new registration reaches the API server's webhook informer asynchronously: a dry-run DELETE is refused
    // once it is active, and writes nothing (the webhook is NoneOnDryRun).
    await waitFor('the pod-grace-delete webhook to be active', 60_000, async () =>
      sb.core.deleteNamespacedPod({ name: 'doomed', namespace: sb.namespace, dryRun: 'All' }).then(
        () => false,
        (e: unknown) => /deletion is underway through PodOpsLifecycle/.test(errorText(e)),
      ), 500);
    expect((await sb.core.readNamespacedPod({ name: 'doomed', namespace: sb.namespace })).metadata?.labels, 'a dry run begins nothing').not.toHaveProperty(perIdKey('operating', GRACE_DELETE_ADAPTER.id));
    const rec = await recordPod(sb, 'doomed');
    try {
      const refusal = await sb.core.deleteNamespacedPod({ name: 'doomed', namespace: sb.namespace }).then(
        () => undefined,
        (e: unknown) => errorText(e),
      );
      expect(refusal, 'the DELETE refused by the webhook pod').toMatch(/deletion is underway through PodOpsLifecycle/);
      // Begun by the webhook pod with its own ServiceAccount (pods get, patch), marked as GraceDelete's.
      const begun = (await sb.core.readNamespacedPod({ name: 'doomed', namespace: sb.namespace })).metadata;
      expect(begun?.labels?.[perIdKey('operationType', GRACE_DELETE_ADAPTER.id)]).toBe('delete');
      expect(begun?.labels).toHaveProperty(Label.preparingToDelete);
      expect(begun?.annotations?.[GRACE_DELETE_ANNOTATION]).toBe(begun?.labels?.[perIdKey('operating', GRACE_DELETE_ADAPTER.id)]);
      // No second DELETE: the release's lifecycle drains the Pod, grants operate and deletes it (pods delete, the chart's grant).
      await waitFor('the lifecycle to delete the Pod', 60_000, async () => {
        const found = await sb.core.readNamespacedPod({ name: 'doomed', namespace: sb.namespace }).catch(() => undefined);
        return found === undefined || found.metadata?.deletionTimestamp !== undefined;
      });
      const firstDeleting = rec.snapshots.findIndex((s) => s.deleting);
      const before = firstDeleting === -1 ? rec.snapshots : rec.snapshots.slice(0, firstDeleting);
      expect(before.some((s) => perIdKey('operate', GRACE_DELETE_ADAPTER.id) in s.labels), 'operate granted before the delete').toBe(true);
      await waitFor('the GraceDeleted Event', 30_000, async () => (await sb.core.listNamespacedEvent({ namespace: sb.namespace, fieldSelector: 'involvedObject.name=doomed' })).items.some((e) => e.reason === 'GraceDeleted'));
    } finally {
      rec.stop();
    }
    // The refusal is counted by the webhook pod that made it.
    expect(sampleOf(await webhookMetrics(), 'ripple_admission_reviews_total', { webhook: 'pod-grace-delete.ops-lifecycle.ripple.dev', operation: 'DELETE', result: 'denied' })).toBeGreaterThanOrEqual(1);
  });

  it('with a CA bundle that did not sign the pod’s certificate the API server refuses controlled Pods with a TLS error (failurePolicy Fail)', async () => {
    const stranger = await generateCa(1, 'not-the-issuer');
    release.install(webhookValues(stranger.certPem));
    const err = await waitFor('a controlled Pod refused for an untrusted certificate', 60_000, async () => {
      const name = `untrusted-${Date.now()}`;
      try {
        await createPod(name);
        await deletePod(name);
        return undefined;
      } catch (e) {
        return e;
      }
    }, 500);
    console.log(`real-node webhooks: the API server's refusal: ${errorText(err)}`);
    const service = release.object('ops-lifecycle-webhook');
    expect(errorText(err)).toMatch(/failed calling webhook \\?"pod-readiness-gate\.ops-lifecycle\.ripple\.dev\\?"/);
    // Dialled through the Service's name, and refused by the API server's own verification.
    expect(errorText(err)).toContain(`https://${service}.${sb.namespace}.svc:443/ops-lifecycle/pod-readiness-gate`);
    expect(errorText(err)).toMatch(/x509: certificate signed by unknown authority/);
    // Pods the webhook does not select are not affected.
    expect(gatesOf(await createPod('uncontrolled-2', false))).toEqual([]);
  });
});
