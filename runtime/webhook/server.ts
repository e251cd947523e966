import { createServer, type Server } from 'node:https';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Logger } from '../../base/log.js';
import { admissionResponse, admissionReviewSchema } from './admission-review.js';
import { generateCa, issueServingCertificate, type CertificateAuthority, type ServingCertificate } from './certs.js';
import type { AdmissionMetrics } from './metrics.js';
import { DEFAULT_ROTATION, needsRenewal, type RotationPolicy } from './rotation.js';
import type { AdmissionWebhookDefinition } from './types.js';

export interface WebhookServerOptions {
  webhooks: readonly AdmissionWebhookDefinition[];
  /** Names and IPs the API server dials the server by; all go into the serving certificate. */
  hosts: readonly string[];
  /** 0 picks a free port. */
  port: number;
  hostname?: string;
  log: Logger;
  rotation?: RotationPolicy;
  /** How often certificate lifetimes are looked at (default hourly). */
  checkEveryMs?: number;
  now?: () => Date;
  /**
   * Called with the CA bundle to register, at start and whenever the CA changes, before the server presents a
   * certificate from the new CA: the API server must trust it first.
   */
  onCaBundle?: (caBundlePem: string) => Promise<void>;
}

export interface RunningWebhookServer {
  port: number;
  /** PEM of the CA(s) the API server must trust for this server. */
  caBundlePem(): string;
  /** Serving certificate now presented. */
  servingCertificatePem(): string;
  /** Renews what needs renewing now (or everything with force), as the periodic check does. */
  rotate(force?: { ca?: boolean; serving?: boolean }): Promise<void>;
  close(): Promise<void>;
}

/**
 * The Hono app: POST /<path> per webhook, each answering AdmissionReview with the webhook's decision. With
 * `authorized`, a review whose Authorization header it refuses is answered 401 before it is read. With `metrics`,
 * every review is counted and timed by its result.
 */
export function webhookApp(
  webhooks: readonly AdmissionWebhookDefinition[],
  log: Logger,
  now: () => Date,
  authorized?: (authorization: string | undefined) => boolean,
  metrics?: AdmissionMetrics,
): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.text('ok'));
  // The API server sends at most a few MiB (an object and its old version).
  app.use('*', bodyLimit({ maxSize: 8 * 1024 * 1024 }));
  for (const w of webhooks) {
    app.post(`/${w.path}`, async (c) => {
      const done = metrics?.begin(w.name);
      if (authorized && !authorized(c.req.header('authorization'))) {
        log.warn({ webhook: w.name }, 'admission review without the function token refused');
        done?.('', 'unauthorized');
        return c.json({ error: 'send Authorization: Bearer <RIPPLE_FUNCTION_TOKEN>' }, 401);
      }
      const parsed = admissionReviewSchema.safeParse(await c.req.json().catch(() => undefined));
      if (!parsed.success) {
        log.warn({ webhook: w.name, issues: parsed.error.issues.slice(0, 3) }, 'not an admission.k8s.io/v1 AdmissionReview');
        done?.('', 'malformed');
        return c.json({ error: 'expected an admission.k8s.io/v1 AdmissionReview' }, 400);
      }
      const req = parsed.data.request;
      const ctx = { webhook: w.name, uid: req.uid, operation: req.operation, namespace: req.namespace, name: req.name, subResource: req.subResource };
      try {
        const decision = await w.admit(req, now());
        const patched = decision.allowed && (decision.patch?.length ?? 0) > 0;
        if (!decision.allowed || patched) log.info({ ...ctx, allowed: decision.allowed, patch: decision.allowed ? decision.patch : undefined }, 'admitted');
        done?.(req.operation, !decision.allowed ? 'denied' : patched ? 'patched' : 'allowed');
        return c.json(admissionResponse(req.uid, decision));
      } catch (err) {
        // A bug, not a verdict: a 500 makes the API server apply the webhook's failurePolicy.
        log.error({ ...ctx, err: err instanceof Error ? err.message : String(err) }, 'admission failed');
        done?.(req.operation, 'error');
        return c.json({ error: 'admission failed' }, 500);
      }
    });
  }
  return app;
}

/**
 * Serves the webhooks over HTTPS with a CA and a serving certificate generated at start (openssl), and keeps
 * them fresh: the serving certificate is re-issued from the same CA before it expires and swapped in without a
 * restart (TLS setSecureContext); the CA is replaced before it expires by first registering a bundle with both
 * CAs, then presenting a certificate from the new one.
 */
export async function startWebhookServer(opts: WebhookServerOptions): Promise<RunningWebhookServer> {
  const policy = opts.rotation ?? DEFAULT_ROTATION;
  const now = opts.now ?? (() => new Date());
  const log = opts.log.child({ component: 'webhook' });
  let ca: CertificateAuthority = await generateCa(policy.caDays);
  let bundle = ca.certPem;
  let serving: ServingCertificate = await issueServingCertificate(ca, opts.hosts, policy.servingDays);
  await opts.onCaBundle?.(bundle);

  const app = webhookApp(opts.webhooks, log, now);
  const server = await new Promise<Server>((resolve) => {
    const s = serve(
      { fetch: app.fetch, port: opts.port, hostname: opts.hostname ?? '127.0.0.1', createServer, serverOptions: { key: serving.keyPem, cert: serving.certPem } },
      () => resolve(s as Server),
    );
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : opts.port;
  log.info({ port, webhooks: opts.webhooks.map((w) => w.name), servingNotAfter: serving.notAfter.toISOString(), caNotAfter: ca.notAfter.toISOString() }, 'webhook server listening');

  let rotating: Promise<void> | undefined;
  const rotate = async (force: { ca?: boolean; serving?: boolean } = {}): Promise<void> => {
    const t = now();
    const renewCa = force.ca === true || needsRenewal(ca.notAfter, policy.caDays, policy.renewWhenLeft, t);
    if (renewCa) {
      const next = await generateCa(policy.caDays);
      // Trust both until every API server has the new bundle; the old CA drops out at the next CA renewal.
      bundle = `${next.certPem}${ca.certPem}`;
      await opts.onCaBundle?.(bundle);
      ca = next;
      log.info({ caNotAfter: ca.notAfter.toISOString() }, 'webhook CA renewed');
    }
    if (renewCa || force.serving === true || needsRenewal(serving.notAfter, policy.servingDays, policy.renewWhenLeft, t)) {
      serving = await issueServingCertificate(ca, opts.hosts, policy.servingDays);
      server.setSecureContext({ key: serving.keyPem, cert: serving.certPem });
      // Kept-alive connections would go on with the old certificate; make clients handshake the new one.
      server.closeIdleConnections();
      log.info({ servingNotAfter: serving.notAfter.toISOString() }, 'webhook serving certificate renewed');
    }
  };
  const check = setInterval(() => {
    if (rotating) return;
    rotating = rotate()
      .catch((err: unknown) => log.error({ err: err instanceof Error ? err.message : String(err) }, 'certificate renewal failed; retrying at the next check'))
      .finally(() => {
        rotating = undefined;
      });
  }, opts.checkEveryMs ?? 3_600_000);
  check.unref();

  return {
    port,
    caBundlePem: () => bundle,
    servingCertificatePem: () => serving.certPem,
    rotate,
    close: async () => {
      clearInterval(check);
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeIdleConnections();
        // The API server keeps connections alive between reviews; one in flight gets a moment to finish.
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      });
    },
  };
}
