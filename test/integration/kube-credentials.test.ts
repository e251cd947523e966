import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { kubeRequest } from '../../kube/raw.js';
import { countApiRequests } from '../harness/api-requests.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The API server connections' credentials (kube/connection-pool.ts, on client-node 2.x's applyToHTTPSOptions),
// against the real API server: a kubeconfig whose user is an exec credential plugin, as EKS, GKE and OIDC
// kubeconfigs are. The plugin's token is used as it comes, and when the API server stops accepting it the
// request is answered all the same, with the plugin run again.
let sb: TestSandbox;
let dir: string;
beforeAll(async () => {
  sb = await openSandbox('kcreds');
  dir = mkdtempSync(path.join(tmpdir(), 'ripple-kcreds-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await sb.cleanup();
});

const selfReview = z.object({ status: z.object({ userInfo: z.object({ username: z.string() }) }) });

async function whoAmI(kc: KubeConfig): Promise<string> {
  const review = await kubeRequest(kc, '/apis/authentication.k8s.io/v1/selfsubjectreviews', { method: 'POST', body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
  return selfReview.parse(review).status.userInfo.username;
}

async function serviceAccountToken(name: string): Promise<string> {
  await sb.core.createNamespacedServiceAccount({ namespace: sb.namespace, body: { metadata: { name } } });
  const tr = await sb.core.createNamespacedServiceAccountToken({ name, namespace: sb.namespace, body: { spec: { expirationSeconds: 900, audiences: [] } } });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token issued for ${name}`);
  return token;
}

describe('API credentials from an exec plugin', () => {
  it('the pooled token is used until the API server refuses it; the refused request is answered with the plugin run again', async () => {
    const [first, second] = [await serviceAccountToken('cred-a'), await serviceAccountToken('cred-b')];
    const tokenFile = path.join(dir, 'token');
    const runs = path.join(dir, 'runs');
    writeFileSync(tokenFile, first);
    writeFileSync(runs, '');
    // A real exec plugin (run with Node itself): the token the file holds now, with an expiry already past so
    // client-node does not keep it for the process's life; each run appends a line to `runs`.
    const plugin = path.join(dir, 'plugin.mjs');
    writeFileSync(
      plugin,
      `import { appendFileSync, readFileSync } from 'node:fs';\n` +
        `appendFileSync(${JSON.stringify(runs)}, 'run\\n');\n` +
        `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', ` +
        `status: { token: readFileSync(${JSON.stringify(tokenFile)}, 'utf8'), expirationTimestamp: '2000-01-01T00:00:00Z' } }));\n`,
    );
    const cluster = sb.kc.getCurrentCluster();
    if (!cluster) throw new Error('no current cluster');
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'sandbox', server: cluster.server, skipTLSVerify: cluster.skipTLSVerify, caData: cluster.caData, caFile: cluster.caFile }],
      users: [{ name: 'plugin', exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin], interactiveMode: 'Never' } }],
      contexts: [{ name: 'plugin', cluster: 'sandbox', user: 'plugin' }],
      currentContext: 'plugin',
    });
    const runCount = () => readFileSync(runs, 'utf8').split('\n').filter(Boolean).length;
    const account = (name: string) => `system:serviceaccount:${sb.namespace}:${name}`;

    expect(await whoAmI(kc)).toBe(account('cred-a'));
    expect(runCount()).toBe(1);
    // The plugin would now print the second token, but the pooled credentials are reused (REFRESH_MS).
    writeFileSync(tokenFile, second);
    expect(await whoAmI(kc)).toBe(account('cred-a'));
    expect(runCount()).toBe(1);

    // Deleting cred-a makes the API server refuse its token (401) once its authentication cache lets go. Every
    // call still gets an answer: the 401 drops the pooled credentials and the request goes again with the plugin's.
    const reviews = countApiRequests('POST', (p) => p === '/apis/authentication.k8s.io/v1/selfsubjectreviews');
    await sb.core.deleteNamespacedServiceAccount({ name: 'cred-a', namespace: sb.namespace });
    const seen: string[] = [];
    try {
      await waitFor('requests to go out as cred-b', 60_000, async () => {
        seen.push(await whoAmI(kc));
        return seen.at(-1) === account('cred-b');
      }, 500);
    } finally {
      reviews.stop();
    }
    // Exactly one request was refused, and it was sent again: one more on the wire than the calls made.
    expect(reviews.answered()[401]).toBe(1);
    expect(reviews.sent()).toBe(seen.length + 1);
    expect(runCount()).toBe(2);
    expect(await whoAmI(kc)).toBe(account('cred-b'));
    console.log(`exec credentials: ${seen.length} calls until cred-b (${seen.filter((s) => s === account('cred-a')).length} still answered as cred-a), plugin runs ${runCount()}`);
  });
});
