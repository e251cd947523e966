import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PrometheusAuthError, prometheusClient, PrometheusUnreachableError } from './client.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise<void>((done) => s.close(() => done()));
});

/** A local server answering every request with `body`, and the Authorization header it last saw. */
async function answering(body: string, status = 200): Promise<{ port: number; seen: () => string | undefined }> {
  let seen: string | undefined;
  const server = createServer((req, res) => {
    seen = req.headers.authorization;
    res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
  });
  servers.push(server);
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  return { port: (server.address() as AddressInfo).port, seen: () => seen };
}

describe('the Prometheus client never shows the credentials of its URL', () => {
  it('in its display URL and when Prometheus answers without JSON', async () => {
    const { port, seen } = await answering('<html>login</html>', 502);
    const client = await prometheusClient({ baseUrl: `http://wva:hunter2@127.0.0.1:${port}`, tlsInsecureSkipVerify: false, bearerToken: 'tok' });
    expect(client.displayUrl).toBe(`http://[redacted]@127.0.0.1:${port}`);
    const err = await client.query('up').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PrometheusUnreachableError);
    expect(String(err)).toContain('answered 502 without JSON');
    expect(String(err)).not.toContain('hunter2');
    expect(seen()).toBe('Bearer tok');
  });

  it('when Prometheus cannot be reached (the fetch error quotes the whole URL)', async () => {
    const { port } = await answering('{}');
    await new Promise<void>((done) => servers.pop()!.close(() => done()));
    const client = await prometheusClient({ baseUrl: `http://wva:hunter2@127.0.0.1:${port}`, tlsInsecureSkipVerify: false });
    const err = await client.query('up').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(err)).toMatch(/cannot reach Prometheus at http:\/\/\[redacted\]@127\.0\.0\.1/);
    expect(String(err)).not.toContain('hunter2');
  });
});

describe('issue 14 scenario 7: refused credentials are an auth error, not unreachability', () => {
  it.each([401, 403])('%i → PrometheusAuthError naming the status, without the token', async (status) => {
    const { port } = await answering('Unauthorized\n', status);
    const client = await prometheusClient({ baseUrl: `http://127.0.0.1:${port}`, tlsInsecureSkipVerify: false, bearerToken: 'secret-tok' });
    const err = await client.query('up').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PrometheusAuthError);
    expect(err).not.toBeInstanceOf(PrometheusUnreachableError);
    expect(String(err)).toContain(`answered ${status}`);
    expect(String(err)).not.toContain('secret-tok');
  });
});
