import http from 'node:http';
import https from 'node:https';
import { urlToHttpOptions } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { dropPooledRequestOptions, pooledRequestOptions, type PooledRequestOptions } from './connection-pool.js';
import { apiErrorOf, apiUrl, KubeTimeoutError } from './raw.js';

/**
 * One watch request to the API server, read line by line as it streams.
 *
 * Why not client-node's `Watch`: it builds a new connection pool (an https.Agent in 1.x, an undici
 * dispatcher in 2.x, with the kubeconfig's certificates read again) for every watch, so every reconnect and
 * every short-lived watch (a namespace's children cache, a pod-wake) pays a TLS handshake; and it pipes the
 * body through `readline`, which decodes every chunk to a string before splitting it (~60 ms of a
 * converge's 1.3 s busy, measured with 1.x, bench/README.md "Round 5"; the rest of a watch's cost is
 * JSON.parse, which any reader pays). Here the
 * request goes out on the pooled keep-alive connection kube/raw.ts uses, lines are cut from the bytes and
 * each line is decoded once.
 */
export interface WatchStreamOptions {
  /** Collection path, e.g. /api/v1/namespaces/x/pods; `watch=true` is added. */
  path: string;
  query: Record<string, string | number | boolean | undefined>;
  /** The Accept header (default application/json); metadata-only watches ask for PartialObjectMetadata. */
  accept?: string;
  /** How long to wait for response headers; the stream itself is bounded by the caller (timeoutSeconds, idle timer). */
  headerTimeoutMs: number;
  /** The API server accepted the watch (200): called once, before any line. */
  onOpen?: () => void;
  /** One event, in stream order. Must not throw. */
  onLine: (type: string, object: unknown) => void;
  /** A line that is not a JSON watch event; it is skipped. */
  onUnreadable: (reason: string) => void;
}

export interface WatchStream {
  /** Settles when the stream ends: resolves on a clean end or `abort()`, rejects on any failure. */
  readonly done: Promise<void>;
  /** Ends the request now, wherever it is (before headers, mid-stream); `done` then resolves. */
  abort(): void;
}

const NEWLINE = 0x0a;

/**
 * Cuts a byte stream into newline-terminated lines. Only whole lines are decoded, so a character split
 * across two chunks is never cut in two; empty lines are skipped.
 */
export class LineSplitter {
  private pending: Buffer | undefined;

  push(chunk: Buffer): string[] {
    const buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: string[] = [];
    let from = 0;
    for (let nl = buf.indexOf(NEWLINE, from); nl >= 0; nl = buf.indexOf(NEWLINE, from)) {
      if (nl > from) out.push(buf.toString('utf8', from, nl));
      from = nl + 1;
    }
    this.pending = from < buf.length ? buf.subarray(from) : undefined;
    return out;
  }

  /** Bytes received after the last newline (a line still arriving). */
  get buffered(): number {
    return this.pending?.length ?? 0;
  }
}

export function openWatch(kc: KubeConfig, opts: WatchStreamOptions): WatchStream {
  let aborted = false;
  let request: http.ClientRequest | undefined;
  let settle: ((err: unknown) => void) | undefined;
  const done = new Promise<void>((resolve, reject) => {
    let settled = false;
    settle = (err) => {
      if (settled) return;
      settled = true;
      if (err === undefined || aborted) resolve();
      else reject(err);
    };
    if (aborted) return settle(undefined);
    void start(kc, opts, {
      onRequest: (req) => {
        request = req;
        if (aborted) req.destroy();
      },
      onLine: opts.onLine,
      settle: (err) => settle?.(err),
    }).catch((err: unknown) => settle?.(err));
  });
  return {
    done,
    abort: () => {
      aborted = true;
      request?.destroy();
      settle?.(undefined);
    },
  };
}

interface Sink {
  onRequest: (req: http.ClientRequest) => void;
  onLine: (type: string, object: unknown) => void;
  settle: (err: unknown) => void;
}

async function start(kc: KubeConfig, opts: WatchStreamOptions, sink: Sink): Promise<void> {
  const url = apiUrl(kc, opts.path, { ...opts.query, watch: true });
  const pooled = await pooledRequestOptions(kc);
  const headers: Record<string, string> = { ...pooled.headers, accept: opts.accept ?? 'application/json' };
    const send = url.protocol === 'https:' ? https.request : http.request;
  // An options object, as kube/raw.ts passes for every other request: what wraps https.request to count or
  // trace requests (the benches, the tests' request counters) sees the watch's path and method the same way.
  const req = send({ ...urlToHttpOptions(url), method: 'GET', headers, agent: pooled.agent });
  sink.onRequest(req);
  // Response headers within the timeout; then the stream's own bounds (the caller's) apply.
  const headerTimer = setTimeout(() => req.destroy(new KubeTimeoutError(`GET ${opts.path} (watch): no answer from the API server within ${opts.headerTimeoutMs} ms`)), opts.headerTimeoutMs);
  req.on('error', (err) => {
    clearTimeout(headerTimer);
    sink.settle(err);
  });
  req.on('response', (res) => {
    clearTimeout(headerTimer);
    if (res.statusCode !== 200) {
      readRefusal(kc, pooled, opts.path, res, sink);
      return;
    }
    res.socket.setKeepAlive(true, 30_000);
    opts.onOpen?.();
    const lines = new LineSplitter();
    res.on('data', (chunk: Buffer) => {
      for (const line of lines.push(chunk)) deliver(line, opts, sink);
    });
    res.on('end', () => sink.settle(undefined));
    res.on('error', (err) => sink.settle(err));
    res.on('close', () => sink.settle(res.complete ? undefined : new Error(`watch ${opts.path}: the connection closed mid-stream`)));
  });
  req.end();
}

function deliver(line: string, opts: WatchStreamOptions, sink: Sink): void {
  let event: unknown;
  try {
    event = JSON.parse(line);
  } catch (err) {
    opts.onUnreadable(`not JSON: ${String(err)}`);
    return;
  }
  if (typeof event !== 'object' || event === null || !('type' in event) || typeof event.type !== 'string') {
    opts.onUnreadable('a line without a type');
    return;
  }
  sink.onLine(event.type, 'object' in event ? event.object : undefined);
}

/** A watch the API server refused: its Status read whole, as a KubeApiError with the HTTP code. */
function readRefusal(kc: KubeConfig, pooled: PooledRequestOptions, path: string, res: http.IncomingMessage, sink: Sink): void {
  const code = res.statusCode ?? 0;
  // Credentials pooled a while ago may have expired: the next attempt reads them again.
  if (code === 401) dropPooledRequestOptions(kc, pooled);
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('error', (err) => sink.settle(err));
  res.on('end', () => {
    let json: unknown;
    try {
      json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      json = undefined;
    }
    sink.settle(apiErrorOf(code, res.statusMessage ?? http.STATUS_CODES[code] ?? '', json, `GET ${path} (watch)`));
  });
}
