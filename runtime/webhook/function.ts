import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { serve } from '@hono/node-server';
import type { Logger } from '../../base/log.js';
import { presentedSecret, secretMatches } from '../secrets.js';
import type { AdmissionMetrics } from './metrics.js';
import { webhookApp } from './server.js';
import type { AdmissionWebhookDefinition } from './types.js';

/** A certificate and key mounted as files, e.g. the Secret a cert-manager Certificate keeps renewed. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** How often the files are read again to pick up a renewed certificate (default every minute). */
  reloadEveryMs?: number;
}

export interface WebhookFunctionOptions {
  webhooks: readonly AdmissionWebhookDefinition[];
  /** The platform's PORT (8080 on Knative and OpenFaaS); 0 picks a free one. */
  port: number;
  hostname?: string;
  log: Logger;
  /**
   * Serve HTTPS from these files. Without them the function speaks plain HTTP and the platform in front of it
   * terminates TLS (Knative's domain TLS, a TLS ingress before the OpenFaaS gateway): the API server only calls
   * webhooks over HTTPS and verifies the certificate it is shown against the registration's caBundle.
   */
  tls?: TlsFiles;
  /**
   * RIPPLE_FUNCTION_TOKEN: every review must carry it as `Authorization: Bearer` (the API server sends one from
   * the AdmissionConfiguration's kubeConfigFile). Required when a webhook writes (`NoneOnDryRun`, e.g. GraceDelete
   * begins delete operations with the function's own credentials): anyone reaching the port could forge a review.
   */
  token?: string;
  /** RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: serve webhooks that write without a token (a mesh authenticates callers). */
  allowUnauthenticated?: boolean;
  /** Counts and times every review (served on the process's ops port, not on this one). */
  metrics?: AdmissionMetrics;
  now?: () => Date;
}

export interface ServedWebhookFunction {
  port: number;
  /** Reads the TLS files again now (as the periodic check does); true if the certificate changed. */
  reloadTls(): Promise<boolean>;
  close(): Promise<void>;
}

async function readPair(tls: TlsFiles): Promise<{ cert: string; key: string }> {
  const [cert, key] = await Promise.all([readFile(tls.certFile, 'utf8'), readFile(tls.keyFile, 'utf8')]);
  return { cert, key };
}

/**
 * The admission webhooks as a function on a serverless platform, like `ripple serve` for a reconciler: one
 * process on PORT, /_/health and /_/ready for the platform's probes, POST /<path> per webhook. Nothing is
 * generated or registered here: the certificate is the platform's or cert-manager's, and the
 * MutatingWebhookConfiguration is a manifest whose caBundle the same issuer fills in (infra/deploy).
 */
export async function serveWebhookFunction(opts: WebhookFunctionOptions): Promise<ServedWebhookFunction> {
  const log = opts.log.child({ component: 'webhook-function' });
  const writers = opts.webhooks.filter((w) => w.sideEffects === 'NoneOnDryRun').map((w) => w.name);
  if (writers.length > 0 && !opts.token && !opts.allowUnauthenticated) {
    throw new Error(
      `refusing to serve ${writers.join(', ')} without RIPPLE_FUNCTION_TOKEN (or RIPPLE_FUNCTION_TOKEN_FILE): these webhooks write with this ` +
        "function's credentials, so a forged review must not reach them; give the API server the token in its AdmissionConfiguration " +
        'kubeConfigFile (docs/ops-lifecycle.md, "Served as a function"), or set RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true only where a mesh authenticates every caller',
    );
  }
  if (writers.length > 0 && !opts.token) log.warn({ webhooks: writers }, 'serving webhooks that write without a token (RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true)');
  const token = opts.token;
  const app = webhookApp(opts.webhooks, log, opts.now ?? (() => new Date()), token ? (authorization) => secretMatches(presentedSecret(authorization) ?? '', token) : undefined, opts.metrics);
  app.get('/_/health', (c) => c.text('OK'));
  app.get('/_/ready', (c) => c.text('OK'));

  let pair = opts.tls ? await readPair(opts.tls) : undefined;
  const server = await new Promise<HttpServer | HttpsServer>((resolve) => {
    const s = serve(
      {
        fetch: app.fetch,
        port: opts.port,
        hostname: opts.hostname ?? '0.0.0.0',
        ...(pair ? { createServer: createHttpsServer, serverOptions: pair } : { createServer: createHttpServer }),
      },
      () => resolve(s as HttpServer | HttpsServer),
    );
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : opts.port;
  log.info({ port, tls: pair !== undefined, callerAuthenticated: token !== undefined, webhooks: opts.webhooks.map((w) => w.name) }, 'webhook function listening');

  const reloadTls = async (): Promise<boolean> => {
    if (!opts.tls || !('setSecureContext' in server)) return false;
    const next = await readPair(opts.tls);
    if (pair && next.cert === pair.cert && next.key === pair.key) return false;
    server.setSecureContext(next);
    // Kept-alive connections would go on with the old certificate.
    server.closeIdleConnections();
    pair = next;
    log.info('webhook serving certificate reloaded from its files');
    return true;
  };
  const timer = opts.tls
    ? setInterval(() => {
        reloadTls().catch((err: unknown) => log.error({ err: err instanceof Error ? err.message : String(err) }, 'reading the TLS files failed; keeping the certificate in use'));
      }, opts.tls.reloadEveryMs ?? 60_000)
    : undefined;
  timer?.unref();

  return {
    port,
    reloadTls,
    close: async () => {
      if (timer) clearInterval(timer);
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      });
    },
  };
}
