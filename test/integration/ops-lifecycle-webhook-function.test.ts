import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opsLifecycleWebhooks } from '../../functions/ops-lifecycle/admission/webhooks.js';
import { CONTROL_LABEL, perIdKey, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { createLogger } from '../../base/log.js';
import { generateCa, issueServingCertificate, type CertificateAuthority } from '../../runtime/webhook/certs.js';
import { serveWebhookFunction, type ServedWebhookFunction } from '../../runtime/webhook/function.js';
import { applyRegistration, deleteRegistration } from '../../runtime/webhook/registration.js';
import { goClient } from '../fixtures/ops-lifecycle-go-client.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const log = createLogger('webhook-function-test', process.env.LOG_LEVEL ?? 'warn');
const gatesOf = (p: V1Pod) => (p.spec?.readinessGates ?? []).map((g) => g.conditionType);
/** OpenFaaS's gateway route for a function; a Knative route has none, the front below handles both. */
const ROUTE = '/function/ops-lifecycle-webhook';

/**
 * What the platform puts in front of a function, reduced to what the API server meets: TLS with a certificate
 * from an issuer (Knative's domain TLS through cert-manager, or a TLS ingress before the OpenFaaS gateway), then
 * plain HTTP to the function, with the gateway's route prefix stripped.
 */
async function tlsFront(ca: CertificateAuthority, upstreamPort: number): Promise<{ port: number; close(): Promise<void> }> {
  const cert = await issueServingCertificate(ca, ['127.0.0.1'], 1);
  const server: HttpsServer = createHttpsServer({ key: cert.keyPem, cert: cert.certPem }, (req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith(`${ROUTE}/`)) {
      res.writeHead(404).end();
      return;
    }
    const upstream = httpRequest({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: url.slice(ROUTE.length), headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

// The admission webhooks served as a function (runtime/webhook/function.ts, `ripple webhook --function`), the
// way Knative or OpenFaaS runs it, reached by the sandbox's kube-apiserver through its admission chain.
describe('ops-lifecycle webhook as a function', () => {
  let sb: TestSandbox;
  const cleanups: Array<() => Promise<void>> = [];
  const webhooks = opsLifecycleWebhooks();

  beforeAll(async () => {
    sb = await openSandbox('opslc-hookfn');
  });
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
    await sb?.cleanup();
  });

  const registration = () => `ripple-${sb.namespace}`;
  async function register(baseUrl: string, caBundlePem: string): Promise<void> {
    await applyRegistration(sb.kc, { name: registration(), baseUrl, caBundlePem, webhooks, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': sb.namespace } } });
  }

  /** A controlled Pod created through the API server; the gate on it can only come from the webhook. */
  async function createPod(name: string): Promise<V1Pod> {
    return sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: { metadata: { name, labels: { [CONTROL_LABEL]: 'true' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } },
    });
  }

  async function gatedOnceActive(prefix: string): Promise<void> {
    // The registration reaches the API server's webhook informer asynchronously.
    await waitFor(`the webhook (${prefix}) to mutate a probe Pod`, 30_000, async () => {
      const name = `${prefix}-${Date.now()}`;
      // Refused while the API server still holds the previous registration's CA: the switch-over, not a verdict.
      const created = await createPod(name).catch(() => undefined);
      if (created === undefined) return undefined;
      await sb.core.deleteNamespacedPod({ name, namespace: sb.namespace, gracePeriodSeconds: 0 });
      return gatesOf(created).includes(SERVICE_READY_CONDITION);
    }, 500);
  }

  it('plain HTTP behind the platform\'s TLS: the API server verifies the front\'s certificate and the function admits', async () => {
    const fn: ServedWebhookFunction = await serveWebhookFunction({ webhooks, port: 0, hostname: '127.0.0.1', log });
    cleanups.push(() => fn.close());
    const ready = await fetch(`http://127.0.0.1:${fn.port}/_/ready`);
    expect(ready.status, 'the platform\'s readiness probe').toBe(200);

    const issuer = await generateCa(1, 'platform-issuer');
    const front = await tlsFront(issuer, fn.port);
    cleanups.push(() => front.close());
    await register(`https://127.0.0.1:${front.port}${ROUTE}`, issuer.certPem);
    cleanups.push(() => deleteRegistration(sb.kc, registration()));
    await gatedOnceActive('front');

    // Both webhooks through the function: the gate at CREATE, and a Go client's Begin answered with pre-check.
    const pod = await createPod('through-front');
    expect(gatesOf(pod)).toEqual([SERVICE_READY_CONDITION]);
    const begun = await goClient(sb).begin('through-front', { id: 'fn', type: 'update' });
    expect(begun?.metadata?.labels).toHaveProperty(perIdKey('preCheck', 'fn'));

    // The API server refuses to send reviews to a front whose certificate the registration does not trust.
    const stranger = await generateCa(1, 'not-the-issuer');
    await register(`https://127.0.0.1:${front.port}${ROUTE}`, stranger.certPem);
    const err = await waitFor('a Pod create refused for an untrusted certificate', 30_000, async () => {
      try {
        const name = `untrusted-${Date.now()}`;
        await createPod(name);
        await sb.core.deleteNamespacedPod({ name, namespace: sb.namespace, gracePeriodSeconds: 0 });
        return undefined;
      } catch (e) {
        return e;
      }
    }, 500);
    expect(String((err as { body?: unknown }).body ?? err)).toMatch(/x509|certificate/i);
    await deleteRegistration(sb.kc, registration());
  });

  it('TLS in-process from mounted files (a cert-manager Secret): verified, and a renewed certificate is picked up without a restart', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ripple-webhook-fn-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const certFile = path.join(dir, 'tls.crt');
    const keyFile = path.join(dir, 'tls.key');
    const writePair = async (ca: CertificateAuthority) => {
      const cert = await issueServingCertificate(ca, ['127.0.0.1'], 1);
      // The key first: a reload between the two writes then fails to pair and keeps the old certificate.
      await writeFile(keyFile, cert.keyPem, { mode: 0o600 });
      await writeFile(certFile, cert.certPem);
    };
    const first = await generateCa(1, 'issuer-1');
    await writePair(first);
    const fn = await serveWebhookFunction({ webhooks, port: 0, hostname: '127.0.0.1', log, tls: { certFile, keyFile, reloadEveryMs: 3_600_000 } });
    cleanups.push(() => fn.close());
    const url = `https://127.0.0.1:${fn.port}`;
    await register(url, first.certPem);
    cleanups.push(() => deleteRegistration(sb.kc, registration()));
    await gatedOnceActive('files');

    // Renewal: the issuer rotates (a new CA, as a cert-manager CA issuer's renewal may), the registration trusts
    // only the new one, and the files change under the running function.
    const second = await generateCa(1, 'issuer-2');
    await writePair(second);
    expect(await fn.reloadTls(), 'the new certificate was read').toBe(true);
    expect(await fn.reloadTls(), 'unchanged files change nothing').toBe(false);
    await register(url, second.certPem);
    await gatedOnceActive('renewed');
    expect(gatesOf(await createPod('after-renewal'))).toEqual([SERVICE_READY_CONDITION]);
  });
});
