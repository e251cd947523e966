import { Agent, fetch as undiciFetch, type RequestInit, type Response } from 'undici';
import { z } from 'zod';
import type { KeyedWorkerOptions } from '../queue/worker.js';
import { ConnectivityError, TerminalError } from '../base/errors.js';
import { CLOUDEVENT_TYPE, reconcileResponseSchema } from './http-function.js';
import { redactUrl } from '../base/redact.js';

// The CLI imports it from here; the one implementation is base/redact.ts.
export { redactUrl };

/**
 * The dispatcher: a KeyedWorker whose reconcile is an HTTP call to the function's URL (Knative,
 * OpenFaaS, or `ripple serve`). It is only another `reconcile` implementation, so the queue's claim,
 * release, dirty re-run, backoff and requeueAfter work exactly as for in-process handlers, and the
 * BullMQ lock is held (and renewed) for as long as the call runs.
 */

export interface DispatchTarget {
  fn: string;
  url: string;
}

const targetSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]*=/, 'expected <function>=<url>, e.g. reconcile-modelserving=http://reconcile-modelserving.ripple-system.svc.cluster.local')
  .transform((s) => {
    const eq = s.indexOf('=');
    return { fn: s.slice(0, eq), url: s.slice(eq + 1) };
  })
  .pipe(z.object({ fn: z.string(), url: z.string().url('the URL after = is not a URL').refine((u) => /^https?:\/\//.test(u), 'the URL must be http:// or https://') }));

/** Parses repeated `--dispatch fn=url` flags; one function at most once. */
export function parseDispatchTargets(flags: readonly string[]): DispatchTarget[] {
  const out: DispatchTarget[] = [];
  for (const flag of flags) {
    const parsed = targetSchema.safeParse(flag);
    if (!parsed.success) throw new Error(`--dispatch ${redactUrl(flag)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
    if (out.some((t) => t.fn === parsed.data.fn)) throw new Error(`--dispatch: ${parsed.data.fn} is named twice`);
    out.push(parsed.data);
  }
  return out;
}

export interface HttpReconcileOptions {
  fn: string;
  url: string;
  /** RIPPLE_FUNCTION_TOKEN, sent as a Bearer token. */
  token?: string;
  /** The whole call, connect to last byte; past it the reconcile counts as a transient failure. */
  timeoutMs: number;
  /**
   * How long a connection may take to be made (default 2 s; undici's own is 10 s). Inside a cluster one is made in
   * milliseconds: a connect that hangs went to an address nothing answers (a pod that is gone, a rule not yet
   * rewritten), and the call is given back as undelivered. Seen in the serverless bench: a first call after a scale
   * from zero that hung for undici's 10 s while the new pod was Ready.
   */
  connectTimeoutMs?: number;
  fetch?: DispatchFetch;
  /**
   * How long the function replica that may still be running this key holds its key lease (keyLeaseLeft): after a
   * failed call the dispatcher keeps the key that long before it lets the retry go, so a replica that is slow or
   * paused cannot write beside the next one.
   */
  leaseLeft?: (key: string) => Promise<number>;
  /**
   * Set where the function's Service may have no pod to take a call (plain Kubernetes, scaled to zero): a call that
   * never reached one (connection refused, no route, connect timeout) is then not a failure. The job goes back to
   * the queue without spending a retry ({ unrun: true }), and this is told, to hold the function's jobs
   * (HoldWhileUnready.refused). Unset (Knative, whose activator holds calls itself; OpenFaaS's gateway), such a
   * call is a transient failure as any other.
   */
  onUndelivered?: () => void;
}

/**
 * The call never reached the function: nothing listened behind the address, no connection could be made, or the pod
 * answered that it is shutting down (503 `draining`, before it ran anything).
 */
export class UndeliveredError extends ConnectivityError {}

/** Connection errors that prove the request was never sent (unlike a reset or a timeout after connecting). */
const UNDELIVERED_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as Error & { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // undici wraps the socket's error as fetch's cause; an AggregateError when several addresses were tried.
  if (err instanceof AggregateError) return err.errors.map(errorCode).find((c) => c !== undefined);
  return errorCode(err.cause);
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text.slice(0, 500);
  }
}

/**
 * Reconcile by POSTing a binary-mode CloudEvent: the body stays the plain JSON request, so a function
 * that knows nothing of CloudEvents (an OpenFaaS function) reads it as well as Knative does. The
 * CloudEvent id is the reconcile id, so the dispatcher's and the function's log lines correlate.
 *
 * 2xx → done (its requeueAfterMs becomes the queue's requeueAfter); 422 → TerminalError (not retried);
 * anything else — 5xx, 429 busy, 404 while a Knative revision is not ready, a timeout, a refused
 * connection — is transient and retried with the key's backoff, except a call that reached no pod when
 * onUndelivered is set: that one goes back to the queue unrun.
 */
export function httpReconcile(opts: HttpReconcileOptions): KeyedWorkerOptions['reconcile'] {
  const doFetch = opts.fetch ?? dispatchFetch(opts.connectTimeoutMs ?? 2_000);
  const shownUrl = redactUrl(opts.url);
  const call = post(opts, shownUrl, doFetch);
  return async (info) => {
    try {
      return await call(info);
    } catch (err) {
      // The call failed, but the replica it reached may still be running the key: keep the claim until its lease
      // has run out (a replica whose renewal is refused stops; one that is paused can no longer send after it).
      const left = opts.leaseLeft ? await opts.leaseLeft(info.key).catch(() => 0) : 0;
      if (left > 0) {
        info.log.debug({ waitMs: left }, "the function's key lease is still alive; keeping the key until it runs out");
        await new Promise((resolve) => setTimeout(resolve, left));
      }
      if (opts.onUndelivered && err instanceof UndeliveredError) {
        opts.onUndelivered();
        info.log.debug({ err: err.message }, 'the call reached no pod of the function; the key goes back to the queue without spending a retry');
        return { unrun: true };
      }
      throw err;
    }
  };
}

/** How a call is sent: undici's fetch (the package's, as client-node's; Node's built-in one takes no connect timeout). */
export type DispatchFetch = (url: string, init: RequestInit) => Promise<Response>;

/** fetch through a connection pool of the dispatcher's own, whose connects give up after connectTimeoutMs. */
function dispatchFetch(connectTimeoutMs: number): DispatchFetch {
  const dispatcher = new Agent({ connect: { timeout: connectTimeoutMs } });
  return (url, init) => undiciFetch(url, { ...init, dispatcher });
}

function post(opts: HttpReconcileOptions, shownUrl: string, doFetch: DispatchFetch): KeyedWorkerOptions['reconcile'] {
  return async ({ key, reason, reconcileId, log, signal, minResourceVersion, token }) => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-id': reconcileId,
      'ce-source': `/ripple/queues/${opts.fn}`,
      'ce-type': CLOUDEVENT_TYPE,
      'ce-subject': key,
      'ce-time': new Date().toISOString(),
    };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let res: Response;
    try {
      res = await doFetch(opts.url, {
        method: 'POST',
        headers,
        // The claim's token travels: the function fences the handler's state writes with it.
        body: JSON.stringify({ key, reason, reconcileId, ...(minResourceVersion !== undefined ? { minResourceVersion } : {}), ...(token ? { fencingToken: token } : {}) }),
        // The claim's signal too: a dispatcher that lost its lease stops waiting for the function.
        signal: AbortSignal.any([AbortSignal.timeout(opts.timeoutMs), signal]),
      });
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      const code = timedOut ? undefined : errorCode(err);
      // The cause's text may quote the URL it tried, credentials included.
      throw new (code !== undefined && UNDELIVERED_CODES.has(code) ? UndeliveredError : ConnectivityError)(
        timedOut ? `POST ${shownUrl}: no answer within ${opts.timeoutMs} ms` : `POST ${shownUrl}: ${redactUrl(err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err))}`,
      );
    }
    const body = await readBody(res);
    const parsed = reconcileResponseSchema.safeParse(body);
    if (res.ok) {
      if (parsed.success && parsed.data.status === 'success') return parsed.data.requeueAfterMs === undefined ? undefined : { requeueAfterMs: parsed.data.requeueAfterMs };
      // A 2xx from something that is not `ripple serve` (a proxy, a custom function): it reconciled.
      log.debug({ status: res.status }, 'function answered 2xx without a Ripple body');
      return undefined;
    }
    const message = parsed.success && 'error' in parsed.data ? parsed.data.error : typeof body === 'string' ? body : res.statusText;
    // `ripple serve` shutting down answers every new call so, before it runs anything: the call reached a pod that is
    // going away (its endpoint not yet gone from the Service), not one that can take it.
    if (res.status === 503 && parsed.success && parsed.data.status === 'draining') throw new UndeliveredError(`POST ${shownUrl}: ${message}`);
    if (res.status === 422) {
      throw new TerminalError(message, parsed.success && parsed.data.status === 'terminal' ? parsed.data.reason : 'InvalidSpec');
    }
    throw new Error(`POST ${shownUrl} answered ${res.status}: ${message}`);
  };
}
