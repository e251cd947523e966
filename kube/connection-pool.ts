/**
 * Connections to the API server that are kept and reused. kube/raw.ts and kube/watch-stream.ts send on
 * Node's own http client, with the credentials and TLS material client-node works out from the kubeconfig
 * (`applyToHTTPSOptions`). Worked out per request, that meant a new TCP connection, a full TLS handshake
 * and the kubeconfig's certificates parsed again for every request — measured in
 * bench/modelserving-converge.ts, TLS set-up was the largest single cost of a reconcile on both sides of
 * the connection (bench/README.md, "ModelServing converge").
 *
 * Here the options are worked out once per KubeConfig and reused for REFRESH_MS, with one keep-alive
 * agent carrying the same TLS material. After REFRESH_MS they are worked out again (credentials from a
 * file or an exec plugin may have rotated; client-go re-reads a token file about as often); the agent
 * is kept while the TLS material is unchanged, and replaced when it changed. A token may expire inside
 * that window: the API server then answers 401, and kube/raw.ts drops the options it used
 * (dropPooledRequestOptions) and retries once with credentials read again, from then on by a fresh copy of
 * the KubeConfig (client-node keeps an exec credential without an expiry in the KubeConfig that read it).
 *
 * The TLS material is taken from the options `applyToHTTPSOptions` fills in, which it reads again on every
 * call (certificate files, an exec plugin's client certificate), never from the agent it hands back:
 * client-node 2.x builds that agent once per cluster and user and returns the same one from then on, so
 * its options keep the certificate of the first call after a rotation.
 *
 * One refresh per KubeConfig is in flight at a time, shared by every caller that needs it: concurrent
 * callers each running applyToHTTPSOptions would each spawn the exec plugin.
 */
import http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';

/** How long worked-out credentials are reused before they are read again. */
export const REFRESH_MS = 30_000;
/**
 * Idle pooled connections are closed after this long, well before the API server's own idle timeout
 * (90 s), so a request never goes out on a connection the server is closing.
 */
const IDLE_SOCKET_MS = 30_000;

/** What a request to the API server is sent with. Each caller gets its own object; headers and agent are shared. */
export interface PooledRequestOptions {
  /** The credentials (Authorization, Impersonate-User), lower-case names; copy before adding to them. */
  readonly headers: Readonly<Record<string, string>>;
  /** The pooled keep-alive agent, a proxy's agent as client-node built it, or none (Node's global agent). */
  readonly agent: http.Agent | undefined;
}

interface Pooled {
  at: number;
  /** The TLS material the keep-alive agent was built with, to see whether a refresh changed it. */
  tls: readonly unknown[];
  agent: http.Agent | undefined;
  headers: Readonly<Record<string, string>>;
  /** The API server refused these credentials (401): read them again at the next call, whatever `at` says. */
  refused: boolean;
}

interface Entry {
  /** Where credentials are worked out: the KubeConfig itself, or its copy made at a refusal (see refresh). */
  source: KubeConfig;
  current: Pooled | undefined;
  /** The refresh in flight, shared by the callers that arrive while it runs. */
  refreshing: Promise<Pooled> | undefined;
}

const pools = new WeakMap<KubeConfig, Entry>();
/** Which pooled options each copy handed out came from, so a 401 drops only the options that were refused. */
const handedOut = new WeakMap<PooledRequestOptions, Pooled>();

/** What of applyToHTTPSOptions' output reaches the TLS connection (client-node copies these onto its agent). */
const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;
type TlsOptions = Pick<https.AgentOptions, (typeof TLS_KEYS)[number]>;

function tlsOf(opts: https.RequestOptions): unknown[] {
  return TLS_KEYS.map((k) => opts[k]);
}

function tlsOptions(opts: https.RequestOptions): TlsOptions {
  const out: Record<string, unknown> = {};
  for (const k of TLS_KEYS) if (opts[k] !== undefined) out[k] = opts[k];
  return out as TlsOptions;
}

function same(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((v, i) => (Buffer.isBuffer(v) && Buffer.isBuffer(b[i]) ? v.equals(b[i]) : v === b[i]));
}

/**
 * The options (headers with credentials, agent) for a request with `kc`. Callers get a fresh object each
 * time; the headers and the agent are shared.
 */
export async function pooledRequestOptions(kc: KubeConfig, now = Date.now()): Promise<PooledRequestOptions> {
  let entry = pools.get(kc);
  if (!entry) {
    entry = { source: kc, current: undefined, refreshing: undefined };
    pools.set(kc, entry);
  }
  let pooled = entry.current;
  if (!pooled || pooled.refused || now - pooled.at >= REFRESH_MS) {
    const e = entry;
    if (!e.refreshing) {
      const refreshing = refresh(e, now).finally(() => {
        if (e.refreshing === refreshing) e.refreshing = undefined;
      });
      e.refreshing = refreshing;
    }
    pooled = await e.refreshing;
  }
  const copy: PooledRequestOptions = { headers: pooled.headers, agent: pooled.agent };
  handedOut.set(copy, pooled);
  return copy;
}

/**
 * applyToHTTPSOptions' headers as a plain object with lower-case names, for Node's http client. A
 * kubeconfig user with a username and password gets them as `auth`; they go out as Basic credentials,
 * as client-node's own clients send them.
 */
function plainHeaders(opts: https.RequestOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(opts.headers ?? {})) {
    if (value === undefined) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  return headers;
}

/**
 * The API server refused the credentials in `used` (a copy pooledRequestOptions handed out): the next call
 * reads them again. Options refreshed since then are kept, so concurrent 401s cause one refresh, not one each.
 */
export function dropPooledRequestOptions(kc: KubeConfig, used: PooledRequestOptions): void {
  const entry = pools.get(kc);
  const pooled = handedOut.get(used);
  if (entry?.current !== undefined && entry.current === pooled) pooled.refused = true;
}

/**
 * A KubeConfig with the same clusters, users and contexts (shared, not copied) and none of the credentials
 * client-node keeps in the one that read them.
 */
function freshCopy(kc: KubeConfig): KubeConfig {
  const copy = new KubeConfig();
  copy.loadFromOptions({ clusters: kc.clusters, users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext });
  return copy;
}

async function refresh(entry: Entry, now: number): Promise<Pooled> {
  const previous = entry.current;
  // After a refusal, credentials are worked out by a fresh copy, used from then on: client-node 2.x keeps an
  // exec plugin's credential that has no expiry in the KubeConfig that ran the plugin, for good, and would hand
  // the refused one out again (1.x ran the plugin at every refresh; client-go runs it again after a 401).
  if (previous?.refused) entry.source = freshCopy(entry.source);
  const opts: https.RequestOptions = {};
  await entry.source.applyToHTTPSOptions(opts);
  // Only a plain HTTPS agent is pooled; a proxy's agent (or an http: cluster's) is used as client-node built it.
  const built = opts.agent;
  let agent = built instanceof http.Agent ? built : undefined;
  let tls: unknown[] = [];
  if (built instanceof https.Agent) {
    tls = tlsOf(opts);
    const pooledAgent = previous?.agent instanceof https.Agent && same(previous.tls, tls) ? previous.agent : new https.Agent({ ...tlsOptions(opts), keepAlive: true, timeout: IDLE_SOCKET_MS });
    // A replaced agent's idle connections are closed; requests in flight on it finish first.
    if (previous?.agent instanceof https.Agent && previous.agent !== pooledAgent) {
      const old = previous.agent;
      setTimeout(() => old.destroy(), IDLE_SOCKET_MS).unref();
    }
    agent = pooledAgent;
  }
  const pooled: Pooled = { at: now, tls, agent, headers: plainHeaders(opts), refused: false };
  entry.current = pooled;
  return pooled;
}
