import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectivityError } from '../runtime/errors.js';
import { KubeTimeoutError, kubeRequest } from './raw.js';

// A loopback HTTP server that answers /ok at once and never answers /hang: what a request sees behind
// a dead connection. Not an imitation of the API server, only of a peer that stops talking.
let server: http.Server;
let kc: KubeConfig;
const hanging = new Set<http.ServerResponse>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url?.startsWith('/ok')) {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ ok: true }));
    } else hanging.add(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
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
});
