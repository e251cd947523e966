import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { dropPooledRequestOptions, pooledRequestOptions, REFRESH_MS } from './connection-pool.js';

function kubeConfig(token: string, ca: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData: Buffer.from(ca).toString('base64') }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

const dirs: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-pool-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function authOf(init: Awaited<ReturnType<typeof pooledRequestOptions>>): string | undefined {
  return init.headers.authorization;
}

/** A kubeconfig whose user is the exec plugin `plugin` (a Node script), run by this Node. */
function execKubeConfig(plugin: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData: Buffer.from('ca-1').toString('base64') }],
    users: [{ name: 'u', exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin], interactiveMode: 'Never' } }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

describe('pooled request options', () => {
  it('reuses one keep-alive agent per kubeconfig', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    const a = await pooledRequestOptions(kc, 1_000);
    const b = await pooledRequestOptions(kc, 2_000);
    expect(a.agent).toBeInstanceOf(https.Agent);
    expect(a.agent).toBe(b.agent);
    expect((a.agent as https.Agent).options.keepAlive).toBe(true);
    expect(a).not.toBe(b); // callers may change their copy
    const other = await pooledRequestOptions(kubeConfig('t1', 'ca-1'), 1_000);
    expect(other.agent).not.toBe(a.agent);
  });

  it('reads credentials again after REFRESH_MS, keeping the agent while the TLS material is the same', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    const first = await pooledRequestOptions(kc, 0);
    expect(authOf(first)).toBe('Bearer t1');
    const user = kc.getCurrentUser();
    if (!user) throw new Error('no user');
    (user as { token?: string }).token = 't2';
    expect(authOf(await pooledRequestOptions(kc, REFRESH_MS - 1))).toBe('Bearer t1');
    const refreshed = await pooledRequestOptions(kc, REFRESH_MS);
    expect(authOf(refreshed)).toBe('Bearer t2');
    expect(refreshed.agent).toBe(first.agent);
  });

  it('builds a new agent when the TLS material changed', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    const first = await pooledRequestOptions(kc, 0);
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('no cluster');
    (cluster as { caData?: string }).caData = Buffer.from('ca-2').toString('base64');
    const refreshed = await pooledRequestOptions(kc, REFRESH_MS);
    expect(refreshed.agent).not.toBe(first.agent);
    expect((refreshed.agent as https.Agent).options.keepAlive).toBe(true);
    expect((refreshed.agent as https.Agent).options.ca).toEqual(Buffer.from('ca-2'));
  });

  it('a client certificate rotated on disk reaches a new agent (client-node keeps its own agent per cluster and user)', async () => {
    const dir = scratch();
    const certFile = path.join(dir, 'client.crt');
    const keyFile = path.join(dir, 'client.key');
    writeFileSync(certFile, 'cert-1');
    writeFileSync(keyFile, 'key-1');
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData: Buffer.from('ca-1').toString('base64') }],
      users: [{ name: 'u', certFile, keyFile }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const first = await pooledRequestOptions(kc, 0);
    expect((first.agent as https.Agent).options.cert).toEqual(Buffer.from('cert-1'));
    writeFileSync(certFile, 'cert-2');
    writeFileSync(keyFile, 'key-2');
    const refreshed = await pooledRequestOptions(kc, REFRESH_MS);
    expect(refreshed.agent).not.toBe(first.agent);
    expect((refreshed.agent as https.Agent).options.cert).toEqual(Buffer.from('cert-2'));
    expect((refreshed.agent as https.Agent).options.key).toEqual(Buffer.from('key-2'));
  });

  it("an exec plugin's expired credentials (token and client certificate) are read again after REFRESH_MS", async () => {
    const dir = scratch();
    const file = (name: string, text: string) => {
      writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    const files = { token: file('token', 'exec-1'), cert: file('cert', 'cert-1'), key: file('key', 'key-1') };
    // A real exec credential plugin, run by client-node with Node itself: prints what the files hold now, with an
    // expiry already past (client-node keeps a credential without an expiry for the process's life).
    const plugin = file(
      'plugin.mjs',
      `import { readFileSync } from 'node:fs';\n` +
        `const f = ${JSON.stringify(files)};\n` +
        `const read = (k) => readFileSync(f[k], 'utf8');\n` +
        `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: ` +
        `{ token: read('token'), clientCertificateData: read('cert'), clientKeyData: read('key'), expirationTimestamp: '2000-01-01T00:00:00Z' } }));\n`,
    );
    const kc = execKubeConfig(plugin);
    const first = await pooledRequestOptions(kc, 0);
    expect(authOf(first)).toBe('Bearer exec-1');
    expect((first.agent as https.Agent).options.cert).toBe('cert-1');
    writeFileSync(files.token, 'exec-2');
    writeFileSync(files.cert, 'cert-2');
    writeFileSync(files.key, 'key-2');
    expect(authOf(await pooledRequestOptions(kc, REFRESH_MS - 1))).toBe('Bearer exec-1');
    const refreshed = await pooledRequestOptions(kc, REFRESH_MS);
    expect(authOf(refreshed)).toBe('Bearer exec-2');
    expect(refreshed.agent).not.toBe(first.agent);
    expect((refreshed.agent as https.Agent).options.cert).toBe('cert-2');
    expect((refreshed.agent as https.Agent).options.key).toBe('key-2');
  });

  it("an exec plugin's credential without an expiry is kept until the API server refuses it, then the plugin runs again", async () => {
    const dir = scratch();
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, 'exec-1');
    // No expirationTimestamp: client-node keeps the credential in the KubeConfig that ran the plugin, for good.
    const plugin = path.join(dir, 'plugin.mjs');
    writeFileSync(
      plugin,
      `import { readFileSync } from 'node:fs';\n` +
        `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: readFileSync(${JSON.stringify(tokenFile)}, 'utf8') } }));\n`,
    );
    const kc = execKubeConfig(plugin);
    const first = await pooledRequestOptions(kc, 0);
    expect(authOf(first)).toBe('Bearer exec-1');
    writeFileSync(tokenFile, 'exec-2');
    const kept = await pooledRequestOptions(kc, REFRESH_MS);
    expect(authOf(kept)).toBe('Bearer exec-1');
    dropPooledRequestOptions(kc, kept);
    const again = await pooledRequestOptions(kc, REFRESH_MS + 1);
    expect(authOf(again)).toBe('Bearer exec-2');
    expect(again.agent).toBe(first.agent);
    // From then on the new credential is the one kept, read again at the next refusal only.
    writeFileSync(tokenFile, 'exec-3');
    expect(authOf(await pooledRequestOptions(kc, 2 * REFRESH_MS + 1))).toBe('Bearer exec-2');
  });

  it('a username and password go out as Basic credentials', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData: Buffer.from('ca-1').toString('base64') }],
      users: [{ name: 'u', username: 'admin', password: 'secret' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    expect(authOf(await pooledRequestOptions(kc, 0))).toBe(`Basic ${Buffer.from('admin:secret').toString('base64')}`);
  });

  it('reads credentials once for concurrent callers (one refresh in flight, shared)', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    // Counts the real applyToHTTPSOptions runs: an exec plugin would be spawned once per run.
    let runs = 0;
    const apply = kc.applyToHTTPSOptions.bind(kc);
    kc.applyToHTTPSOptions = async (opts) => {
      runs += 1;
      return apply(opts);
    };
    const first = await Promise.all([pooledRequestOptions(kc, 0), pooledRequestOptions(kc, 0), pooledRequestOptions(kc, 0)]);
    expect(runs).toBe(1);
    expect(first.map(authOf)).toEqual(['Bearer t1', 'Bearer t1', 'Bearer t1']);
    await Promise.all([pooledRequestOptions(kc, REFRESH_MS), pooledRequestOptions(kc, REFRESH_MS), pooledRequestOptions(kc, REFRESH_MS)]);
    expect(runs).toBe(2);
  });

  it('refused options are read again at the next call, keeping the agent; a drop of older options does nothing', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    const first = await pooledRequestOptions(kc, 0);
    const user = kc.getCurrentUser();
    if (!user) throw new Error('no user');
    (user as { token?: string }).token = 't2';
    dropPooledRequestOptions(kc, first);
    const again = await pooledRequestOptions(kc, 1);
    expect(authOf(again)).toBe('Bearer t2');
    expect(again.agent).toBe(first.agent);
    // A second 401 of a request sent with the first options (concurrent callers) must not drop the new ones.
    (user as { token?: string }).token = 't3';
    dropPooledRequestOptions(kc, first);
    expect(authOf(await pooledRequestOptions(kc, 2))).toBe('Bearer t2');
  });
});
