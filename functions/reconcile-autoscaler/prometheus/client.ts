/**
 * A small client for Prometheus's HTTP API (`GET /api/v1/query`), with WVA's connection settings:
 * bearer token (inline wins over a token file), CA, client certificate, server name, and
 * skip-verify. It returns the JSON body as it came (error bodies included, they say what was wrong);
 * `queries/prometheus-response.ts` validates it.
 */
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { exchange } from '../../../kube/raw.js';
import { redactUrl } from '../../../base/redact.js';
import { currentReconcile, LeaseLostError, requestTimeoutMs, throwIfLeaseLost } from '../../../base/reconcile-scope.js';
import type { PrometheusSettings } from '../config/controller-config.js';

export interface PrometheusClient {
  /**
   * The server, for logs and records: without the credentials a `PROMETHEUS_BASE_URL` may carry,
   * as is every message this client throws (they end up on VA status and in Warning Events).
   */
  readonly displayUrl: string;
  /** An instant query; resolves to the response body, rejects when Prometheus cannot be reached. */
  query(promql: string): Promise<unknown>;
}

export class PrometheusUnreachableError extends Error {
  override readonly name = 'PrometheusUnreachableError';
}

/** Prometheus (or the proxy in front of it) refused the credentials: 401 or 403. Retrying cannot help. */
export class PrometheusAuthError extends Error {
  override readonly name = 'PrometheusAuthError';
}

async function readOptional(path: string | undefined): Promise<Buffer | undefined> {
  return path ? readFile(path) : undefined;
}

/** `settings.baseUrl` must be set. */
export async function prometheusClient(settings: PrometheusSettings & { baseUrl: string }, opts: { timeoutMs?: number } = {}): Promise<PrometheusClient> {
  const base = settings.baseUrl.replace(/\/+$/, '');
  const https = base.startsWith('https:');
  const [ca, cert, key] = https
    ? await Promise.all([readOptional(settings.caCertPath), readOptional(settings.clientCertPath), readOptional(settings.clientKeyPath)])
    : [undefined, undefined, undefined];
  const agent = https
    ? new Agent({
        rejectUnauthorized: !settings.tlsInsecureSkipVerify,
        ...(ca ? { ca } : {}),
        ...(cert ? { cert } : {}),
        ...(key ? { key } : {}),
        ...(settings.serverName ? { servername: settings.serverName } : {}),
      })
    : undefined;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const shown = redactUrl(base);

  return {
    displayUrl: shown,
    async query(promql) {
      // Read per query so a rotated token file is picked up without a restart.
      const token = settings.bearerToken ?? (settings.tokenPath ? (await readFile(settings.tokenPath, 'utf8')).trim() : undefined);
      const url = new URL(`${base}/api/v1/query`);
      url.searchParams.set('query', promql);
      // Inside a reconcile: not sent once its lease may no longer send, never waited on past the lease, and
      // given up when the claim is lost (the cycle then stops instead of running on to its end).
      throwIfLeaseLost(`Prometheus query at ${shown}`);
      const limitMs = requestTimeoutMs(timeoutMs);
      const claim = currentReconcile()?.signal;
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), limitMs);
      const onClaimLost = () => abort.abort();
      claim?.addEventListener('abort', onClaimLost, { once: true });
      try {
        // Node's own client, as kube/raw.ts sends to the API server: it takes the agent with the CA and client
        // certificate (the global fetch does not), and a URL's user and password go out as Basic credentials
        // when no token is set.
        const res = await exchange(url, { method: 'GET', headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, agent, signal: abort.signal }, undefined);
        const text = res.text;
        if (res.status === 401 || res.status === 403) {
          // The body is the server's words (no secret of ours); the token is never part of the message.
          throw new PrometheusAuthError(redactUrl(`${shown} answered ${res.status} ${res.statusText || (res.status === 401 ? 'Unauthorized' : 'Forbidden')}: ${text.trim().slice(0, 200)}`));
        }
        try {
          return JSON.parse(text) as unknown;
        } catch {
          throw new PrometheusUnreachableError(redactUrl(`${shown} answered ${res.status} without JSON: ${text.slice(0, 200)}`));
        }
      } catch (err) {
        if (err instanceof PrometheusUnreachableError || err instanceof PrometheusAuthError) throw err;
        // Whatever the error quotes, the message goes through redactUrl: a URL in it may carry credentials.
        if (claim?.aborted) throw new LeaseLostError(`Prometheus query at ${shown}: given up, the reconcile lost its claim`);
        const why = abort.signal.aborted ? `no answer within ${limitMs} ms` : err instanceof Error ? err.message : String(err);
        throw new PrometheusUnreachableError(redactUrl(`cannot reach Prometheus at ${shown}: ${why}`));
      } finally {
        clearTimeout(timer);
        claim?.removeEventListener('abort', onClaimLost);
      }
    },
  };
}
