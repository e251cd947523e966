import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectivityError } from '../base/errors.js';
import { KubeTimeoutError, kubeRequest } from './raw.js';

// A loopback HTTP server that answers /ok at once and never answers /hang: what a request sees behind
// a dead connection. Not an imitation of the API server, only of a peer that stops talking.
let server: http.Server;
let kc: KubeConfig;
const hanging = new Set<http.ServerResponse>();
/** The Authorization header of every request to /auth, which answers 401 unless it carries `accepted`. */
const authSeen: string[] = [];
let accepted = '';
let port = 0;

/** A kubeconfig of its own (its own pool entry) for the loopback server, with a bearer token. */
function tokenConfig(token: string): KubeConfig {
  const c = new KubeConfig();
  c.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return c;
}

function setToken(c: KubeConfig, token: string): void {
  const user = c.getCurrentUser();
  if (!user) throw new Error('no user');
  (user as { token?: string }).token = token;
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url?.startsWith('/auth')) {
      authSeen.push(req.headers.authorization ?? '');
      const ok = req.headers.authorization === `Bearer ${accepted}`;
      res.statusCode = ok ? 200 : 401;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(ok ? { ok: true } : { kind: 'Status', status: 'Failure', reason: 'Unauthorized', message: 'Unauthorized', code: 401 }));
    } else if (req.url?.startsWith('/cut')) {
      // Headers and half of the promised body, then the connection goes.
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '100' });
      res.write('{"items":[');
      setTimeout(() => res.socket?.destroy(), 20);
    } else if (req.url?.startsWith('/echo')) {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ method: req.method, contentType: req.headers['content-type'], accept: req.headers.accept, body: JSON.parse(body || 'null') }));
      });
    } else if (req.url?.startsWith('/ok')) {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ ok: true }));
    } else hanging.add(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
});
afterAll(async () => {
  for (const res of hanging) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('kubeRequest', () => {
  it('answers as before when the server answers', async () => {
    await expect(kubeRequest(kc, '/ok')).resolves.toEqual({ ok: true });
  });

  it('sends the body as JSON with its content type, and the caller\'s Accept', async () => {
    await expect(kubeRequest(kc, '/echo', { method: 'PATCH', body: { spec: { replicas: 3 } }, contentType: 'application/merge-patch+json', accept: 'application/json;as=Table' })).resolves.toEqual({
      method: 'PATCH',
      contentType: 'application/merge-patch+json',
      accept: 'application/json;as=Table',
      body: { spec: { replicas: 3 } },
    });
  });

  it('an answer cut short is an error, not a truncated body', async () => {
    const err = await kubeRequest(kc, '/cut').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/aborted|closed before the whole answer arrived/);
  });

  it('gives up on a request that gets no answer, with a transient timeout error naming the call', async () => {
    const started = Date.now();
    const err = await kubeRequest(kc, '/hang', { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeTimeoutError);
    expect(err).toBeInstanceOf(ConnectivityError);
    expect((err as Error).message).toBe('GET /hang: no answer from the API server within 200 ms');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("stops at the caller's signal too, and says it was aborted rather than timed out", async () => {
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 100);
    const err = await kubeRequest(kc, '/hang', { signal: abort.signal, timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(KubeTimeoutError);
    expect((err as Error).name).toBe('AbortError');
  });

  it('an already aborted signal fails at once', async () => {
    const err = await kubeRequest(kc, '/hang', { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
  });

  it('a refused pooled token is dropped and the request retried once with the token read again', async () => {
    const c = tokenConfig('one');
    accepted = 'one';
    authSeen.length = 0;
    await expect(kubeRequest(c, '/auth')).resolves.toEqual({ ok: true });
    // The token rotates inside REFRESH_MS: the pooled one is now refused, the kubeconfig gives the new one.
    setToken(c, 'two');
    accepted = 'two';
    await expect(kubeRequest(c, '/auth', { method: 'POST', body: { a: 1 } })).resolves.toEqual({ ok: true });
    expect(authSeen).toEqual(['Bearer one', 'Bearer one', 'Bearer two']);
    // A token refused again after being read again is an answer: one retry, then the 401 is the caller's.
    accepted = 'three';
    authSeen.length = 0;
    await expect(kubeRequest(c, '/auth')).rejects.toMatchObject({ code: 401, reason: 'Unauthorized' });
    expect(authSeen).toEqual(['Bearer two', 'Bearer two']);
  });
});
