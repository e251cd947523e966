import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { dropPooledFetchOptions, pooledFetchOptions, REFRESH_MS } from './connection-pool.js';

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

  it('reads credentials once for concurrent callers (one refresh in flight, shared)', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    // Counts the real applyToFetchOptions runs: an exec plugin would be spawned once per run.
    let runs = 0;
    const apply = kc.applyToFetchOptions.bind(kc);
    kc.applyToFetchOptions = async (opts) => {
      runs += 1;
      return apply(opts);
    };
    const first = await Promise.all([pooledFetchOptions(kc, 0), pooledFetchOptions(kc, 0), pooledFetchOptions(kc, 0)]);
    expect(runs).toBe(1);
    expect(first.map(authOf)).toEqual(['Bearer t1', 'Bearer t1', 'Bearer t1']);
    await Promise.all([pooledFetchOptions(kc, REFRESH_MS), pooledFetchOptions(kc, REFRESH_MS), pooledFetchOptions(kc, REFRESH_MS)]);
    expect(runs).toBe(2);
  });

  it('refused options are read again at the next call, keeping the agent; a drop of older options does nothing', async () => {
    const kc = kubeConfig('t1', 'ca-1');
    const first = await pooledFetchOptions(kc, 0);
    const user = kc.getCurrentUser();
    if (!user) throw new Error('no user');
    (user as { token?: string }).token = 't2';
    dropPooledFetchOptions(kc, first);
    const again = await pooledFetchOptions(kc, 1);
    expect(authOf(again)).toBe('Bearer t2');
    expect(again.agent).toBe(first.agent);
    // A second 401 of a request sent with the first options (concurrent callers) must not drop the new ones.
    (user as { token?: string }).token = 't3';
    dropPooledFetchOptions(kc, first);
    expect(authOf(await pooledFetchOptions(kc, 2))).toBe('Bearer t2');
  });
});
