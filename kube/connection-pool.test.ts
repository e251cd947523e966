import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { pooledFetchOptions, REFRESH_MS } from './connection-pool.js';

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

function authOf(init: Awaited<ReturnType<typeof pooledFetchOptions>>): string | null {
  return new Headers(init.headers as Record<string, string>).get('authorization') ?? (init.headers as { get(k: string): string | null }).get('authorization');
}

describe('pooled fetch options', () => {
  it('reuses one keep-alive agent per kubeconfig', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    const a = await pooledFetchOptions(kc, 1_000);
    const b = await pooledFetchOptions(kc, 2_000);
    expect(a.agent).toBeInstanceOf(https.Agent);
    expect(a.agent).toBe(b.agent);
    expect((a.agent as https.Agent).options.keepAlive).toBe(true);
    expect(a).not.toBe(b); // callers may change their copy
    const other = await pooledFetchOptions(kubeConfig('t1', 'ca-1'), 1_000);
    expect(other.agent).not.toBe(a.agent);
  });

  it('reads credentials again after REFRESH_MS, keeping the agent while the TLS material is the same', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    const first = await pooledFetchOptions(kc, 0);
    expect(authOf(first)).toBe('Bearer t1');
    const user = kc.getCurrentUser();
    if (!user) throw new Error('no user');
    (user as { token?: string }).token = 't2';
    expect(authOf(await pooledFetchOptions(kc, REFRESH_MS - 1))).toBe('Bearer t1');
    const refreshed = await pooledFetchOptions(kc, REFRESH_MS);
    expect(authOf(refreshed)).toBe('Bearer t2');
    expect(refreshed.agent).toBe(first.agent);
  });

  it('builds a new agent when the TLS material changed', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    const first = await pooledFetchOptions(kc, 0);
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('no cluster');
    (cluster as { caData?: string }).caData = Buffer.from('ca-2').toString('base64');
    const refreshed = await pooledFetchOptions(kc, REFRESH_MS);
    expect(refreshed.agent).not.toBe(first.agent);
    expect((refreshed.agent as https.Agent).options.keepAlive).toBe(true);
  });
});
