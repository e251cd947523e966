import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
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

  it('when Prometheus cannot be reached', async () => {
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

/** A CA and two certificates it signs (Prometheus's serving one, the autoscaler's client one), made with openssl. */
function issueCertificates(dir: string): { ca: string; server: { cert: string; key: string }; client: { cert: string; key: string } } {
  const openssl = (args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=test-ca', '-days', '1']);
  const leaf = (name: string, ext: string) => {
    writeFileSync(path.join(dir, `${name}.cnf`), `${ext}\nbasicConstraints=CA:FALSE\n`);
    openssl(['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.cnf`]);
    return { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
  };
  return {
    ca: path.join(dir, 'ca.crt'),
    server: leaf('prometheus', 'subjectAltName=DNS:prometheus.test\nextendedKeyUsage=serverAuth'),
    client: leaf('autoscaler', 'extendedKeyUsage=clientAuth'),
  };
}

describe('over HTTPS, with the CA, client certificate, server name and token file the settings name', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-prom-tls-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('Prometheus sees the client certificate and the token; without the CA the server is not trusted', async () => {
    const certs = issueCertificates(dir);
    // Prometheus's side: trusts only the test CA's client certificates and answers with who it saw.
    const server = createTlsServer({ cert: readFileSync(certs.server.cert), key: readFileSync(certs.server.key), ca: readFileSync(certs.ca), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'success', client: peer.subject?.CN, authorization: req.headers.authorization, query: new URL(req.url ?? '', 'https://x').searchParams.get('query') }));
    });
    servers.push(server);
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    const { port } = server.address() as AddressInfo;
    const tokenPath = path.join(dir, 'token');
    writeFileSync(tokenPath, 'file-tok\n');
    const settings = { baseUrl: `https://127.0.0.1:${port}`, tlsInsecureSkipVerify: false, caCertPath: certs.ca, clientCertPath: certs.client.cert, clientKeyPath: certs.client.key, serverName: 'prometheus.test', tokenPath };

    const client = await prometheusClient(settings);
    expect(await client.query('up')).toEqual({ status: 'success', client: 'autoscaler', authorization: 'Bearer file-tok', query: 'up' });

    const untrusted = await prometheusClient({ ...settings, caCertPath: undefined });
    const err = await untrusted.query('up').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PrometheusUnreachableError);
    expect(String(err)).toMatch(/certificate/);
  });
});
