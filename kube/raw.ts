import http from 'node:http';
import https from 'node:https';
import { urlToHttpOptions } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ConnectivityError } from '../base/errors.js';
import { dropPooledRequestOptions, pooledRequestOptions } from './connection-pool.js';
import { currentReconcile, requestTimeoutMs, throwIfLeaseLost } from '../base/reconcile-scope.js';
import { statusSchema } from './object.js';
import { observedKubeRequest } from './request-metrics.js';

/**
 * How long one API request may take, headers and body together. Node's http client sets no timeout, and a
 * connection that went dead without a reset (a dropped NAT entry, a hung load balancer) would hang the
 * caller for as long as the kernel keeps the socket: a reconcile, a relist or a lease renewal forever.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** The API server did not answer within the request's timeout. Transient: retried like any connectivity error. */
export class KubeTimeoutError extends ConnectivityError {}

/** An API server answer other than 2xx, with its HTTP code and Status reason. */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export function isStatus(err: unknown, code: number): boolean {
  if (err instanceof KubeApiError) return err.code === code;
  // @kubernetes/client-node's ApiException carries the HTTP code as `code`.
  return typeof err === 'object' && err !== null && 'code' in err && (err as { code: unknown }).code === code;
}

export interface RawRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** The Accept header (default application/json); the watcher asks for PartialObjectMetadataList with it. */
  accept?: string;
  /** The caller's cancellation; combined with the timeout (whichever comes first). */
  signal?: AbortSignal;
  /** Overrides DEFAULT_REQUEST_TIMEOUT_MS for this call; 0 disables the timeout (the caller's signal bounds it). */
  timeoutMs?: number;
  /** Extra headers, e.g. `Impersonate-User` to act as another identity the kubeconfig's user may impersonate. */
  headers?: Record<string, string>;
}

/**
 * A plain JSON request to the API server with the kubeconfig's credentials. Used where the typed
 * clients would reshape objects (lists and custom resources the watcher keeps as they came).
 */
export async function kubeRequest(kc: KubeConfig, path: string, req: RawRequest = {}): Promise<unknown> {
  const { status, statusText, text } = await sendRetrying401(kc, path, req);
  const ok = status >= 200 && status < 300;
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch (err) {
    // An API group the server does not serve answers a plain-text 404: still an API error, with its code.
    if (ok) throw err;
  }
  if (!ok) throw apiErrorOf(status, statusText, json, `${req.method ?? 'GET'} ${path}`);
  return json;
}

/**
 * A request whose answer is not JSON (the API server's own `/metrics`), with the same credentials, timeout and
 * retry as kubeRequest: the body as text. An answer other than 2xx is a KubeApiError, as there.
 */
export async function kubeRequestText(kc: KubeConfig, path: string, req: RawRequest = {}): Promise<string> {
  const { status, statusText, text } = await sendRetrying401(kc, path, req);
  if (status >= 200 && status < 300) return text;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  throw apiErrorOf(status, statusText, json, `${req.method ?? 'GET'} ${path}`);
}

async function sendRetrying401(kc: KubeConfig, path: string, req: RawRequest): Promise<Answer> {
  const url = apiUrl(kc, path, req.query);
  const answer = await send(kc, url, path, req);
  // Pooled credentials are reused for a while (kube/connection-pool.ts) and a token may expire inside that
  // while: a 401 drops them and the request is sent once more with credentials read again. The API server
  // authenticates before anything else, so a refused request did nothing and is safe to send again.
  return answer.status === 401 ? send(kc, url, path, req) : answer;
}

/** The URL of `path` on the kubeconfig's current cluster, with the query's defined parameters. */
export function apiUrl(kc: KubeConfig, path: string, query: RawRequest['query'] = {}): URL {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(cluster.server + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
  return url;
}

/** The API server's refusal as a KubeApiError: its HTTP code, and the reason and message of its Status body if any. */
export function apiErrorOf(code: number, statusText: string, body: unknown, what: string): KubeApiError {
  const status = statusSchema.safeParse(body);
  const reason = status.success ? (status.data.reason ?? '') : '';
  const message = (status.success ? status.data.message : undefined) ?? statusText;
  return new KubeApiError(code, reason, `${what}: ${code} ${message}`);
}

/** An answer read whole. */
export interface Answer {
  status: number;
  statusText: string;
  text: string;
}

/**
 * One try of a request: its answer read whole, under the request's timeout and the callers' signals.
 * Sent with Node's own http client on the pooled keep-alive agent, as kube/watch-stream.ts sends watches:
 * a fetch's Headers, body streams and Response (node-fetch's, under client-node 1.x, when measured) cost ~2×
 * the CPU per request (317 against 145 µs for a small GET on the sandbox), and a converge sends hundreds. No
 * Accept-Encoding is sent, so answers come uncompressed (what a watch gets too): the API server compresses only
 * large lists, and on the links Ripple runs over (in-cluster, a node to its API server) decompressing them
 * would cost more CPU than the bytes would take to arrive.
 */
async function send(kc: KubeConfig, url: URL, path: string, req: RawRequest): Promise<Answer> {
  // Credentials and a keep-alive agent worked out once per kubeconfig (kube/connection-pool.ts).
  const pooled = await pooledRequestOptions(kc);
  const method = req.method ?? 'GET';
  const headers: Record<string, string> = { ...pooled.headers, accept: req.accept ?? 'application/json' };
  for (const [name, value] of Object.entries(req.headers ?? {})) headers[name.toLowerCase()] = value;
  let body: string | undefined;
  if (req.body !== undefined) {
    body = JSON.stringify(req.body);
    headers['content-type'] = req.contentType ?? 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  // Inside a reconcile, a call made after its claim was lost (or its lease's send deadline passed) is not
  // sent, one in flight is aborted, and none waits for an answer past the lease's end.
  throwIfLeaseLost(`${method} ${path}`);
  const timeoutMs = requestTimeoutMs(req.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  const claim = currentReconcile()?.signal;
  // One controller for both causes, wired by hand: AbortSignal.any on a long-lived caller signal
  // (a watcher's stop signal, used for every relist) keeps a listener per call on Node 20.
  const abort = new AbortController();
  let timedOut = false;
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          abort.abort();
        }, timeoutMs)
      : undefined;
  const onCallerAbort = () => abort.abort();
  if (req.signal?.aborted) abort.abort();
  else req.signal?.addEventListener('abort', onCallerAbort, { once: true });
  claim?.addEventListener('abort', onCallerAbort, { once: true });
  try {
    // Counted and timed (rest_client_* metrics) when the process turned them on: kube/request-metrics.ts.
    const answer = await observedKubeRequest(kc, method, url, () => exchange(url, { method, headers, agent: pooled.agent, signal: abort.signal }, body));
    if (answer.status === 401) dropPooledRequestOptions(kc, pooled);
    return answer;
  } catch (err) {
    if (timedOut) throw new KubeTimeoutError(`${method} ${path}: no answer from the API server within ${timeoutMs} ms`);
    throw err;
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onCallerAbort);
    claim?.removeEventListener('abort', onCallerAbort);
  }
}

/**
 * The request on the wire. An options object, as the watch stream passes: what wraps https.request to
 * count or trace requests (the benches, the tests' request counters) sees every request's path and method.
 * Aborting the signal ends it wherever it is, with an AbortError before the answer's headers and the
 * socket's error after them; an answer cut short is an error, never a truncated body. Also what the
 * autoscaler's Prometheus client sends with (its own agent, CA and token).
 */
export function exchange(url: URL, options: http.RequestOptions, body: string | undefined): Promise<Answer> {
  const request = url.protocol === 'https:' ? https.request : http.request;
  return new Promise<Answer>((resolve, reject) => {
    const req = request({ ...urlToHttpOptions(url), ...options }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        resolve({ status, statusText: res.statusMessage ?? http.STATUS_CODES[status] ?? '', text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('close', () => {
        if (!res.complete) reject(new Error(`${options.method ?? 'GET'} ${url.pathname}: the connection closed before the whole answer arrived`));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
