import { randomUUID } from 'node:crypto';
import { serve, type ServerType } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { RedisClient } from '../queue/connection.js';
import { Counter, type Registry } from 'prom-client';
import { z } from 'zod';
import type { QueueMetrics } from '../queue/metrics.js';
import type { ReconcileInfo, ReconcileOutcome } from '../queue/worker.js';
import { isTerminal } from '../base/errors.js';
import type { FunctionDefinition } from './function.js';
import type { Logger } from '../base/log.js';
import { redactUrl } from '../base/redact.js';
import { presentedSecret, secretMatches } from './secrets.js';
import { ClaimLease } from '../queue/lease.js';
import { runScript } from '../queue/run-script.js';
import { inReconcileScope, type ReconcileScope } from '../base/reconcile-scope.js';

/*
 * One function as an HTTP service (Knative Serving, OpenFaaS, or any platform that POSTs).
 *
 * Request: POST / with a reconcile request as
 *   - JSON: {"key": "ns/name"} | {"namespace": "ns", "name": "name"} | a Kubernetes object (its metadata names it),
 *     optional "reason", "reconcileId" and "minResourceVersion" (ReconcileRequest.minResourceVersion: the
 *     version of the object the event that woke it carried; a decimal etcd revision or an opaque string);
 *   - a binary-mode CloudEvent: ce-specversion/ce-id/ce-source/ce-type headers, the body is the data above
 *     (or empty, then ce-subject is the key);
 *   - a structured-mode CloudEvent: Content-Type application/cloudevents+json, the event as JSON.
 * Answer (plain JSON, never a CloudEvent, so Knative Eventing does not turn answers into reply events):
 *   200 {status:"success", requeueAfterMs?}   reconciled; reconcile again after requeueAfterMs if present
 *   400 {status:"invalid", error}              the request cannot be understood (not retried by Knative)
 *   401 {status:"unauthorized"}                the request lacks RIPPLE_FUNCTION_TOKEN
 *   415 {status:"invalid"}                     batched CloudEvents
 *   422 {status:"terminal", error, reason}     TerminalError: the object's spec can never work; not retried
 *   429 {status:"busy"}                        this key is being reconciled right now (or max in-flight): retry later
 *   500 {status:"error", error, requestId}     transient failure: retry with backoff. The body says only that it
 *                                              failed and under which request id the function logged why: an
 *                                              error's text may carry what a caller must not see
 *   503 {status:"draining"}                    shutting down
 * Knative's delivery retries 429 and 5xx and not 400/422, which is exactly transient vs terminal.
 *
 * A function refuses to start without RIPPLE_FUNCTION_TOKEN: it reconciles with the function's
 * ServiceAccount, so an open endpoint lets anyone who reaches it drive the controller. Only
 * RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true, for a mesh that authenticates callers itself, waives it.
 */

export const CLOUDEVENT_TYPE = 'dev.ripple.reconcile';

const reasonSchema = z.string().max(200);
const reconcileIdSchema = z.string().min(1).max(200);
// A resourceVersion as the API server writes it: short, printable, no spaces.
const minResourceVersionSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[\x21-\x7e]+$/, 'minResourceVersion must be a resourceVersion (printable, no spaces)');
// Any queue key: `ns/name`, `name`, or a function's own form (emit-events uses `ns/Kind/name`).
const keySchema = z
  .string()
  .min(1)
  .max(1024)
  .refine((k) => ![...k].some((ch) => ch.charCodeAt(0) < 0x20), 'key must not contain control characters');

// Unknown fields are stripped, not rejected: a Kubernetes object or a producer's extra fields are fine.
// The dispatcher's claim on the key (queue/fence.ts): the handler's state writes are fenced by it.
const fencingTokenSchema = z.string().regex(/^\d{1,30}$/, 'fencingToken must be the decimal token of a queue claim');
const extras = {
  reason: reasonSchema.optional(),
  reconcileId: reconcileIdSchema.optional(),
  minResourceVersion: minResourceVersionSchema.optional(),
  fencingToken: fencingTokenSchema.optional(),
};
const byKeySchema = z.object({ key: keySchema, ...extras });
const byNameSchema = z.object({ namespace: z.string().min(1).max(253).optional(), name: z.string().min(1).max(253), ...extras });
// A Kubernetes object, e.g. what Knative's ApiServerSource sends in Resource mode.
const byObjectSchema = z.object({ metadata: z.object({ name: z.string().min(1).max(253), namespace: z.string().min(1).max(253).optional() }) });

function payloadOf(data: unknown): { key: string; reason?: string; reconcileId?: string; minResourceVersion?: string; fencingToken?: string } | undefined {
  const byKey = byKeySchema.safeParse(data);
  if (byKey.success) return byKey.data;
  const byName = byNameSchema.safeParse(data);
  if (byName.success) {
    const { namespace, name, ...rest } = byName.data;
    return { key: namespace ? `${namespace}/${name}` : name, ...rest };
  }
  const byObject = byObjectSchema.safeParse(data);
  if (byObject.success) {
    const { namespace, name } = byObject.data.metadata;
    return { key: namespace ? `${namespace}/${name}` : name };
  }
  return undefined;
}

const structuredEventSchema = z
  .object({
    specversion: z.literal('1.0', { error: 'specversion must be "1.0"' }),
    id: z.string().min(1).max(200),
    source: z.string().min(1),
    type: z.string().min(1),
    subject: z.string().optional(),
    datacontenttype: z.string().optional(),
    data: z.unknown().optional(),
    data_base64: z.string().optional(),
  })
  .passthrough();

const binaryHeadersSchema = z.object({
  'ce-specversion': z.literal('1.0', { error: 'ce-specversion must be "1.0"' }),
  'ce-id': z.string().min(1).max(200),
  'ce-source': z.string().min(1),
  'ce-type': z.string().min(1),
  'ce-subject': z.string().optional(),
});

export type RequestMode = 'json' | 'cloudevent-binary' | 'cloudevent-structured';

export interface ParsedReconcileRequest {
  key: string;
  reason: string;
  reconcileId?: string;
  /** ReconcileRequest.minResourceVersion, when the caller sent one. */
  minResourceVersion?: string;
  /** The dispatcher's queue claim: the handler's state writes are fenced by it. */
  fencingToken?: string;
  mode: RequestMode;
}

export type ParseResult = { ok: true; request: ParsedReconcileRequest } | { ok: false; status: 400 | 415; error: string };

function issues(err: z.ZodError, where: string): string {
  return `${where}: ${err.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`;
}

function fromData(data: unknown, subject: string | undefined, mode: RequestMode, fallbackId: string | undefined, where: string): ParseResult {
  if (data === undefined || data === null || data === '') {
    const key = keySchema.safeParse(subject);
    if (!key.success) return { ok: false, status: 400, error: `${where}: no data and no subject: send {"key": "namespace/name"} as data or set the subject to the key` };
    return { ok: true, request: { key: key.data, reason: 'cloudevent', reconcileId: fallbackId, mode } };
  }
  const p = payloadOf(data);
  if (!p) return { ok: false, status: 400, error: `${where}: expected {"key": "namespace/name"}, {"namespace": "…", "name": "…"} or a Kubernetes object` };
  const key = keySchema.safeParse(p.key);
  if (!key.success) return { ok: false, status: 400, error: issues(key.error, where) };
  const woken = p.minResourceVersion !== undefined ? { minResourceVersion: p.minResourceVersion } : {};
  const fenced = p.fencingToken !== undefined ? { fencingToken: p.fencingToken } : {};
  return { ok: true, request: { key: key.data, reason: p.reason ?? (mode === 'json' ? 'http' : 'cloudevent'), reconcileId: p.reconcileId ?? fallbackId, ...woken, ...fenced, mode } };
}

function parseJson(text: string, where: string): { ok: true; value: unknown } | { ok: false; status: 400; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, status: 400, error: `${where} is not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * Reads a reconcile request in any of the three accepted forms. Pure: headers (lower-case names)
 * and the raw body in, a request or a 4xx with a message out. Any content type other than
 * CloudEvents is read as JSON, so `curl -d` and `faas-cli invoke` work without setting one.
 */
export function parseReconcileRequest(headers: Record<string, string | undefined>, body: string): ParseResult {
  const contentType = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType === 'application/cloudevents-batch+json') {
    return { ok: false, status: 415, error: 'batched CloudEvents are not accepted: send one event per request' };
  }
  if (contentType === 'application/cloudevents+json') {
    const json = parseJson(body, 'the structured CloudEvent');
    if (!json.ok) return json;
    const event = structuredEventSchema.safeParse(json.value);
    if (!event.success) return { ok: false, status: 400, error: issues(event.error, 'the structured CloudEvent') };
    let data = event.data.data;
    if (event.data.data_base64 !== undefined) {
      const decoded = parseJson(Buffer.from(event.data.data_base64, 'base64').toString('utf8'), 'data_base64');
      if (!decoded.ok) return decoded;
      data = decoded.value;
    } else if (typeof data === 'string' && data.trim().startsWith('{')) {
      // Some producers put JSON text in `data` instead of the JSON value.
      const decoded = parseJson(data, 'data');
      if (!decoded.ok) return decoded;
      data = decoded.value;
    }
    return fromData(data, event.data.subject, 'cloudevent-structured', event.data.id, 'the structured CloudEvent');
  }
  if (headers['ce-specversion'] !== undefined) {
    const ce = binaryHeadersSchema.safeParse(headers);
    if (!ce.success) return { ok: false, status: 400, error: issues(ce.error, 'the binary CloudEvent headers') };
    if (!body.trim()) return fromData(undefined, ce.data['ce-subject'], 'cloudevent-binary', ce.data['ce-id'], 'the binary CloudEvent');
    const json = parseJson(body, 'the binary CloudEvent data');
    if (!json.ok) return json;
    return fromData(json.value, ce.data['ce-subject'], 'cloudevent-binary', ce.data['ce-id'], 'the binary CloudEvent data');
  }
  if (!body.trim()) return { ok: false, status: 400, error: 'empty body: send {"key": "namespace/name"}' };
  const json = parseJson(body, 'the body');
  if (!json.ok) return json;
  return fromData(json.value, undefined, 'json', undefined, 'the body');
}

/** The answer's body, shared with the dispatcher, which parses it with this schema. */
export const reconcileResponseSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('success'), key: z.string(), reconcileId: z.string(), requeueAfterMs: z.number().int().min(0).optional(), durationMs: z.number() }),
  z.object({ status: z.literal('terminal'), key: z.string(), reconcileId: z.string(), error: z.string(), reason: z.string() }),
  z.object({ status: z.literal('error'), key: z.string().optional(), reconcileId: z.string().optional(), requestId: z.string().optional(), error: z.string() }),
  z.object({ status: z.literal('busy'), key: z.string().optional(), error: z.string() }),
  z.object({ status: z.literal('invalid'), error: z.string() }),
  z.object({ status: z.literal('unauthorized'), error: z.string() }),
  z.object({ status: z.literal('draining'), error: z.string() }),
]);
export type ReconcileResponse = z.infer<typeof reconcileResponseSchema>;

/** Where a function's replicas keep the per-key lease of the reconcile running for it. */
export function httpLeaseKey(prefix: string, fn: string, key: string): string {
  return `${prefix}:${fn}:ripple:http-lease:${key}`;
}

/** How long (ms) the replica reconciling `key` may still hold it: 0 when none does. */
export async function keyLeaseLeft(redis: RedisClient, prefix: string, fn: string, key: string): Promise<number> {
  return Math.max(0, await redis.pttl(httpLeaseKey(prefix, fn, key)));
}

// Per-key lease: SET NX with a TTL renewed while the handler runs, released only by its holder.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

export interface HttpFunctionOptions {
  def: FunctionDefinition;
  /** Runs the handler with the host's context (FunctionHost.runHandler). */
  run: (info: Pick<ReconcileInfo, 'key' | 'reason' | 'log' | 'minResourceVersion' | 'signal'> & Partial<Pick<ReconcileInfo, 'token'>>) => Promise<ReconcileOutcome | void>;
  redis: RedisClient;
  prefix: string;
  log: Logger;
  /** RIPPLE_FUNCTION_TOKEN: requests must carry it as a Bearer token. */
  token?: string;
  /**
   * RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: serve without a token (a mesh authenticates callers).
   * Default: read from the environment, so every way of starting a function honours it.
   */
  allowUnauthenticated?: boolean;
  /** Concurrent reconciles before answering 429 (of-watchdog's max_inflight); 0 or unset: no limit. */
  maxInflight?: number;
  /** How long a crashed replica's key lease outlives it; renewed at a third of this while running. */
  leaseMs?: number;
  /** Readiness beyond draining and max in-flight (Redis). */
  ready?: () => Promise<string[]>;
  registry?: Registry;
  metrics?: QueueMetrics;
}

export interface HttpFunction {
  app: Hono;
  inflight(): number;
  /** Stops taking requests (503) and resolves when the running reconciles have finished. */
  drain(): Promise<void>;
}

const allowUnauthenticatedSchema = z.object({
  RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: z.enum(['true', 'false'], { error: 'RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED must be "true" or "false"' }).optional(),
});

/** RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED, parsed: only the literal `true` opts out of the token. */
export function allowUnauthenticatedFromEnv(env: Readonly<Record<string, string | undefined>>): boolean {
  const parsed = allowUnauthenticatedSchema.safeParse({ RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: env['RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED'] || undefined });
  if (!parsed.success) throw new Error(`invalid environment: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  return parsed.data.RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED === 'true';
}

/**
 * The HTTP transport of one function. The handler runs through `run`, i.e. with exactly the context a
 * queue worker gives it. Each key is leased in Redis while it runs: the dispatcher already holds the
 * queue's claim, but a request that timed out on the dispatcher's side may still be running here when
 * the retry arrives, and a platform calling directly (Knative Eventing) has no claim at all — the lease
 * keeps "never two reconciles of one key at once" in both cases by answering 429, which both retry.
 */
export function httpFunction(opts: HttpFunctionOptions): HttpFunction {
  const fn = opts.def.name;
  const allowUnauthenticated = opts.allowUnauthenticated ?? allowUnauthenticatedFromEnv(process.env);
  if (!opts.token && !allowUnauthenticated) {
    throw new Error(
      `refusing to serve ${fn} without RIPPLE_FUNCTION_TOKEN (or RIPPLE_FUNCTION_TOKEN_FILE): set the token the dispatcher sends, ` +
        'or RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true only where a service mesh authenticates every caller',
    );
  }
  if (!opts.token) opts.log.warn({ function: fn }, 'serving without a token (RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true): callers must be authenticated by the mesh');
  const leaseMs = opts.leaseMs ?? 30_000;
  const max = opts.maxInflight ?? 0;
  let inflight = 0;
  let draining = false;
  const idle: Array<() => void> = [];
  const requests = opts.registry
    ? ((opts.registry.getSingleMetric('ripple_http_function_requests_total') as Counter<'function' | 'status'> | undefined) ??
      new Counter({
        name: 'ripple_http_function_requests_total',
        help: 'Reconcile requests answered by an HTTP function, by outcome',
        labelNames: ['function', 'status'],
        registers: [opts.registry],
      }))
    : undefined;

  const app = new Hono();
  const answer = (c: Context, code: 200 | 400 | 401 | 415 | 422 | 429 | 500 | 503, body: ReconcileResponse) => {
    requests?.inc({ function: fn, status: body.status });
    return c.json(body, code);
  };
  // Shutting down, every answer ends its connection (reconciles, probes, scrapes alike): a client must not send its
  // next request on a connection the server is about to close (it could not tell whether a call sent so ran).
  app.use('*', async (c, next) => {
    await next();
    if (draining) c.res.headers.set('Connection', 'close');
  });
  // Anything that escapes a route (Redis failing while the lease is taken): the same generic 500.
  app.onError((err, c) => {
    if (err instanceof HTTPException) return err.getResponse();
    const requestId = randomUUID();
    opts.log.error({ function: fn, requestId, err: redactUrl(err.message) }, 'request failed; answering 500');
    return answer(c, 500, { status: 'error', requestId, error: internalError(requestId) });
  });

  // of-watchdog's paths, so OpenFaaS probes the function as it probes its own templates.
  app.get('/_/health', (c) => c.text('OK'));
  app.get('/healthz', (c) => c.text('OK'));
  const readiness = async (c: Context) => {
    if (draining) return c.json({ ready: false, problems: ['draining'] }, 503);
    if (max > 0 && inflight >= max) return c.json({ ready: false, problems: [`max in-flight (${max}) reached`] }, 429);
    const problems = (await opts.ready?.()) ?? [];
    return problems.length === 0 ? c.text('OK') : c.json({ ready: false, problems }, 503);
  };
  app.get('/_/ready', readiness);
  app.get('/readyz', readiness);
  if (opts.registry) {
    const registry = opts.registry;
    app.get('/metrics', async (c) => c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType }));
  }

  app.post(
    '/',
    // A Kubernetes object (ApiServerSource) can be up to ~1.5 MiB; anything much bigger is not a request.
    bodyLimit({ maxSize: 3 * 1024 * 1024, onError: (c) => answer(c, 400, { status: 'invalid', error: 'body too large' }) }),
    async (c) => {
      if (draining) return answer(c, 503, { status: 'draining', error: 'shutting down; retry on another replica' });
      if (max > 0 && inflight >= max) {
        c.header('Retry-After', '1');
        return answer(c, 429, { status: 'busy', error: `max in-flight (${max}) reached` });
      }
      // Counted from here, not from when the handler starts, so drain() also waits for a request
      // that is still reading its body.
      inflight++;
      try {
        return await handle(c);
      } finally {
        inflight--;
        if (inflight === 0) for (const resolve of idle.splice(0)) resolve();
      }
    },
  );

  async function handle(c: Context): Promise<Response> {
    if (opts.token !== undefined && opts.token !== '') {
      const presented = presentedSecret(c.req.header('authorization'));
      if (presented === undefined || !secretMatches(presented, opts.token)) {
        c.header('WWW-Authenticate', 'Bearer realm="ripple-function"');
        return answer(c, 401, { status: 'unauthorized', error: 'send Authorization: Bearer <RIPPLE_FUNCTION_TOKEN>' });
      }
    }
    const parsed = parseReconcileRequest(c.req.header(), await c.req.text());
    if (!parsed.ok) return answer(c, parsed.status, { status: 'invalid', error: parsed.error });
    const { key, reason, mode, minResourceVersion, fencingToken } = parsed.request;
    const reconcileId = parsed.request.reconcileId ?? randomUUID();
    const log = opts.log.child({ function: fn, key, reconcileId });

    const leaseKey = httpLeaseKey(opts.prefix, fn, key);
    const sentAt = Date.now();
    if ((await opts.redis.set(leaseKey, reconcileId, 'PX', leaseMs, 'NX')) !== 'OK') {
      c.header('Retry-After', '1');
      log.debug('key is being reconciled by another request; answering busy');
      return answer(c, 429, { status: 'busy', key, error: 'this key is being reconciled by another request' });
    }
    // The same lease as a queue worker's claim (queue/lease.ts): renewed at a third, its end checked by the clock
    // before every send, the run aborted through its signal when a renewal is refused (another replica has the key).
    const lease = new ClaimLease(
      async () => (await runScript(opts.redis, RENEW, [leaseKey], [reconcileId, String(leaseMs)])) === 1,
      key,
      fencingToken ?? reconcileId,
      leaseMs,
      sentAt,
      log,
    );
    const scope: ReconcileScope = {
      get signal() {
        return lease.signal;
      },
      token: fencingToken ?? '',
      get sendBy() {
        return lease.sendBy;
      },
      get aliveUntil() {
        return lease.aliveUntil;
      },
    };

    const processed = opts.metrics?.startProcessing(fn);
    const startedAt = Date.now();
    try {
      const info = { key, reason: `${reason} (${mode})`, log, signal: lease.signal, ...(fencingToken !== undefined ? { token: fencingToken } : {}) };
      const result = await inReconcileScope(scope, () => opts.run({ ...info, ...(minResourceVersion !== undefined ? { minResourceVersion } : {}) }));
      const durationMs = Date.now() - startedAt;
      const requeueAfterMs = result?.requeueAfterMs !== undefined && result.requeueAfterMs >= 0 ? Math.round(result.requeueAfterMs) : undefined;
      opts.metrics?.reconcileTotal.inc({ controller: fn, result: requeueAfterMs === undefined ? 'success' : 'requeue_after' });
      opts.metrics?.reconcileTime.observe({ controller: fn }, durationMs / 1000);
      log.debug({ mode, requeueAfterMs, ms: durationMs }, 'reconciled');
      return answer(c, 200, { status: 'success', key, reconcileId, requeueAfterMs, durationMs });
    } catch (err) {
      const message = redactUrl(err instanceof Error ? err.message : String(err));
      opts.metrics?.reconcileTotal.inc({ controller: fn, result: 'error' });
      opts.metrics?.reconcileErrors.inc({ controller: fn });
      if (isTerminal(err)) {
        opts.metrics?.terminalErrors.inc({ controller: fn });
        log.warn({ err: message }, 'reconcile failed terminally; answering 422');
        // A terminal error says what is wrong with the spec: the caller is told, to report it.
        return answer(c, 422, { status: 'terminal', key, reconcileId, error: message, reason: err.reason });
      }
      const requestId = randomUUID();
      log.warn({ err: message, requestId }, 'reconcile failed; answering 500 so the caller retries');
      return answer(c, 500, { status: 'error', key, reconcileId, requestId, error: internalError(requestId) });
    } finally {
      lease.stop();
      // A lost lease is left to run out in Redis: a write sent just before the loss may still be on its way, and
      // the next replica must not start before it lands (the dispatcher waits for it too: keyLeaseLeft).
      if (lease.lost === undefined) {
        await runScript(opts.redis, RELEASE, [leaseKey], [reconcileId]).catch((err: unknown) => log.warn({ err: String(err) }, 'could not release the key lease; it expires by itself'));
      }
      processed?.();
    }
  }

  return {
    app,
    inflight: () => inflight,
    drain: () => {
      draining = true;
      return inflight === 0 ? Promise.resolve() : new Promise<void>((resolve) => idle.push(resolve));
    },
  };
}

/** The 500 body's message: where to look, not what happened. */
function internalError(requestId: string): string {
  return `reconcile failed; the function logged the cause with requestId ${requestId}`;
}

export interface ServedFunction {
  server: ServerType;
  port: number;
  http: HttpFunction;
  /**
   * Graceful: refuse new requests (503 `draining`, each closing its connection), finish running reconciles, linger
   * while clients still hold connections (up to lingerMs), then close the listener.
   */
  close(): Promise<void>;
}

export interface ServeOptions extends HttpFunctionOptions {
  port: number;
  hostname: string;
  /**
   * After the drain, how long the server keeps answering `draining` while clients still hold kept-alive connections
   * to it, before it closes them. A connection the server closes while idle races the client's next call on it: the
   * client sees a reset and cannot tell whether that call ran, so it spends a retry. A client that honours the
   * server's Keep-Alive hint (Node's 5 s; undici, the dispatcher's fetch) closes an idle connection before the
   * server would, so lingering a little past the hint leaves no connection to close under a call. Default 0.
   */
  lingerMs?: number;
}

export async function serveFunction(opts: ServeOptions): Promise<ServedFunction> {
  const http = httpFunction(opts);
  return new Promise((resolve) => {
    const server = serve({ fetch: http.app.fetch, port: opts.port, hostname: opts.hostname }, (info) =>
      resolve({
        server,
        port: info.port,
        http,
        close: async () => {
          await http.drain();
          const until = Date.now() + (opts.lingerMs ?? 0);
          while (Date.now() < until && (await openConnections(server)) > 0) await new Promise((r) => setTimeout(r, 50));
          await new Promise<void>((done) => {
            server.close(() => done());
            if ('closeIdleConnections' in server) server.closeIdleConnections();
          });
        },
      }),
    );
  });
}

function openConnections(server: ServerType): Promise<number> {
  return new Promise((resolve) => server.getConnections((err, count) => resolve(err ? 0 : count)));
}
