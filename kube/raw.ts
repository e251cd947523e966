import type { KubeConfig } from '@kubernetes/client-node';
import fetch, { Headers, type RequestInit } from 'node-fetch';
import { statusSchema } from './object.js';

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
  signal?: AbortSignal;
}

/**
 * A plain JSON request to the API server with the kubeconfig's credentials. Used where the typed
 * clients would reshape objects (lists and custom resources the watcher keeps as they came).
 */
export async function kubeRequest(kc: KubeConfig, path: string, req: RawRequest = {}): Promise<unknown> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(cluster.server + path);
  for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
  const init: RequestInit = await kc.applyToFetchOptions({});
  init.method = req.method ?? 'GET';
  // applyToFetchOptions returns a Headers object (with the Authorization header); keep it, add ours.
  const headers = new Headers(init.headers);
  headers.set('Accept', 'application/json');
  if (req.body !== undefined) {
    headers.set('Content-Type', req.contentType ?? 'application/json');
    init.body = JSON.stringify(req.body);
  }
  init.headers = headers;
  if (req.signal) init.signal = req.signal as RequestInit['signal'];
  const res = await fetch(url, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch (err) {
    // An API group the server does not serve answers a plain-text 404: still an API error, with its code.
    if (res.ok) throw err;
  }
  if (!res.ok) {
    const status = statusSchema.safeParse(json);
    const reason = status.success ? (status.data.reason ?? '') : '';
    const message = status.success ? (status.data.message ?? res.statusText) : res.statusText;
    throw new KubeApiError(res.status, reason, `${init.method} ${path}: ${res.status} ${message}`);
  }
  return json;
}
