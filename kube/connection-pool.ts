/**
 * Connections to the API server that are kept and reused. client-node's `applyToFetchOptions` builds a
 * new `https.Agent` (without keep-alive) on every call, so every request kube/raw.ts sent opened a TCP
 * connection, did a full TLS handshake and parsed the kubeconfig's certificates again — measured in
 * bench/modelserving-converge.ts, TLS set-up was the largest single cost of a reconcile on both sides
 * of the connection (bench/README.md, "ModelServing converge").
 *
 * Here the options are worked out once per KubeConfig and reused for REFRESH_MS, with one keep-alive
 * agent carrying the same TLS material. After REFRESH_MS they are worked out again (credentials from a
 * file or an exec plugin may have rotated; client-go re-reads a token file about as often); the agent
 * is kept while the TLS material is unchanged, and replaced when it changed. A token may expire inside
 * that window: the API server then answers 401, and kube/raw.ts drops the options it used
 * (dropPooledFetchOptions) and retries once with credentials read again.
 *
 * One refresh per KubeConfig is in flight at a time, shared by every caller that needs it: concurrent
 * callers each running applyToFetchOptions would each spawn the exec plugin.
 */
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { Headers, type RequestInit } from 'node-fetch';

/** How long worked-out credentials are reused before they are read again. */
export const REFRESH_MS = 30_000;
/**
 * Idle pooled connections are closed after this long, well before the API server's own idle timeout
 * (90 s), so a request never goes out on a connection the server is closing.
 */
const IDLE_SOCKET_MS = 30_000;

interface Pooled {
  at: number;
  init: RequestInit;
  /** The TLS material the keep-alive agent was built with, to see whether a refresh changed it. */
  tls: readonly unknown[];
  agent: https.Agent | undefined;
  /** init's headers (credentials) as a plain object with lower-case names, for Node's http client. */
  headers: Readonly<Record<string, string>>;
  /** The API server refused these credentials (401): read them again at the next call, whatever `at` says. */
  refused: boolean;
}

interface Entry {
  current: Pooled | undefined;
  /** The refresh in flight, shared by the callers that arrive while it runs. */
  refreshing: Promise<Pooled> | undefined;
}

const pools = new WeakMap<KubeConfig, Entry>();
/** Which pooled options each copy handed out came from, so a 401 drops only the options that were refused. */
const handedOut = new WeakMap<RequestInit, Pooled>();

const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

function tlsOf(agent: https.Agent): unknown[] {
  const o = agent.options as Record<string, unknown>;
  return TLS_KEYS.map((k) => o[k]);
}

function same(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((v, i) => (Buffer.isBuffer(v) && Buffer.isBuffer(b[i]) ? v.equals(b[i]) : v === b[i]));
}

/**
 * The fetch options (headers with credentials, agent) for a request with `kc`. Callers get a fresh
 * object each time and may change its method, headers and body; the agent is shared.
 */
export async function pooledFetchOptions(kc: KubeConfig, now = Date.now()): Promise<RequestInit> {
  let entry = pools.get(kc);
  if (!entry) {
    entry = { current: undefined, refreshing: undefined };
    pools.set(kc, entry);
  }
  let pooled = entry.current;
  if (!pooled || pooled.refused || now - pooled.at >= REFRESH_MS) {
    const e = entry;
    if (!e.refreshing) {
      const refreshing = refresh(kc, e, now).finally(() => {
        if (e.refreshing === refreshing) e.refreshing = undefined;
      });
      e.refreshing = refreshing;
    }
    pooled = await e.refreshing;
  }
  const copy: RequestInit = { ...pooled.init };
  handedOut.set(copy, pooled);
  return copy;
}

/** The headers (credentials) of options pooledFetchOptions handed out, lower-case names; copy before adding to them. */
export function pooledHeaders(init: RequestInit): Readonly<Record<string, string>> {
  return handedOut.get(init)?.headers ?? plainHeaders(init);
}

/** node-fetch's Headers (what applyToFetchOptions returns) as a plain object; it lower-cases the names. */
function plainHeaders(init: RequestInit): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of new Headers(init.headers)) headers[name] = value;
  return headers;
}

/**
 * The API server refused the credentials in `used` (a copy pooledFetchOptions handed out): the next call
 * reads them again. Options refreshed since then are kept, so concurrent 401s cause one refresh, not one each.
 */
export function dropPooledFetchOptions(kc: KubeConfig, used: RequestInit): void {
  const entry = pools.get(kc);
  const pooled = handedOut.get(used);
  if (entry?.current !== undefined && entry.current === pooled) pooled.refused = true;
}

async function refresh(kc: KubeConfig, entry: Entry, now: number): Promise<Pooled> {
  const init: RequestInit = await kc.applyToFetchOptions({});
  const previous = entry.current;
  // Only a plain HTTPS agent is pooled; a proxy's agent is used as client-node built it.
  const built = init.agent;
  let agent: https.Agent | undefined;
  let tls: unknown[] = [];
  if (built instanceof https.Agent) {
    tls = tlsOf(built);
    agent = previous?.agent && same(previous.tls, tls) ? previous.agent : new https.Agent({ ...built.options, keepAlive: true, timeout: IDLE_SOCKET_MS });
    // A replaced agent's idle connections are closed; requests in flight on it finish first.
    if (previous?.agent && previous.agent !== agent) {
      const old = previous.agent;
      setTimeout(() => old.destroy(), IDLE_SOCKET_MS).unref();
    }
    init.agent = agent;
  }
  const pooled: Pooled = { at: now, init, tls, agent, headers: plainHeaders(init), refused: false };
  entry.current = pooled;
  return pooled;
}
