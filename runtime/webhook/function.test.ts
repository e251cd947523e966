import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../base/log.js';
import type { AdmissionDecision } from './admission-review.js';
import { serveWebhookFunction, type ServedWebhookFunction } from './function.js';
import { AdmissionMetrics } from './metrics.js';
import type { AdmissionWebhookDefinition } from './types.js';

const log = createLogger('webhook-function-unit', 'silent');
const TOKEN = 'a-token-of-at-least-16-chars';
/** A webhook that writes with the function's credentials, as GraceDelete does. */
const writing: AdmissionWebhookDefinition = {
  name: 'writes.test.ripple.dev',
  path: 'writes',
  rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
  failurePolicy: 'Ignore',
  timeoutSeconds: 5,
  sideEffects: 'NoneOnDryRun',
  admit: () => ({ allowed: true }),
};
const review = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: { uid: 'u', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, operation: 'DELETE', namespace: 'ns', name: 'p' },
};

describe('serveWebhookFunction: callers of a webhook that writes', () => {
  let served: ServedWebhookFunction | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });
  const post = (port: number, headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${port}/writes`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(review) });

  it('refuses to start without a token unless unauthenticated callers are allowed explicitly', async () => {
    await expect(serveWebhookFunction({ webhooks: [writing], port: 0, hostname: '127.0.0.1', log })).rejects.toThrow(/RIPPLE_FUNCTION_TOKEN/);
    served = await serveWebhookFunction({ webhooks: [writing], port: 0, hostname: '127.0.0.1', log, allowUnauthenticated: true });
    expect((await post(served.port)).status).toBe(200);
  });

  it('with a token, answers 401 to a review without it and the review with it', async () => {
    served = await serveWebhookFunction({ webhooks: [writing], port: 0, hostname: '127.0.0.1', log, token: TOKEN });
    expect((await post(served.port)).status).toBe(401);
    expect((await post(served.port, { authorization: 'Bearer wrong-token-wrong-token' })).status).toBe(401);
    const ok = await post(served.port, { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { response: { allowed: boolean } }).response.allowed).toBe(true);
    // The platform's probes stay open.
    expect((await fetch(`http://127.0.0.1:${served.port}/_/ready`)).status).toBe(200);
  });

  it('webhooks that only compute need no token', async () => {
    served = await serveWebhookFunction({ webhooks: [{ ...writing, sideEffects: 'None' }], port: 0, hostname: '127.0.0.1', log });
    expect((await post(served.port)).status).toBe(200);
  });
});

describe('serveWebhookFunction: admission metrics', () => {
  let served: ServedWebhookFunction | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  it('counts every review by webhook, operation and result, and times it', async () => {
    const registry = new Registry();
    const verdicts: Record<string, AdmissionDecision | Error> = { p: { allowed: true, patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }] }, q: { allowed: true }, r: { allowed: false, message: 'no' }, s: new Error('a bug') };
    const hook: AdmissionWebhookDefinition = {
      ...writing,
      admit: (req) => {
        const v = verdicts[req.name ?? '']!;
        if (v instanceof Error) throw v;
        return v;
      },
    };
    served = await serveWebhookFunction({ webhooks: [hook], port: 0, hostname: '127.0.0.1', log, token: TOKEN, metrics: new AdmissionMetrics(registry) });
    const post = (body: unknown, authorization = `Bearer ${TOKEN}`) =>
      fetch(`http://127.0.0.1:${served!.port}/writes`, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: JSON.stringify(body) });
    for (const name of ['p', 'p', 'q', 'r', 's']) await post({ ...review, request: { ...review.request, name } });
    expect((await post(review, 'Bearer not-the-token-at-all')).status).toBe(401);
    expect((await post({ kind: 'NotAReview' })).status).toBe(400);

    const reviews = (await registry.getSingleMetric('ripple_admission_reviews_total')!.get()).values.map((v) => [v.labels.operation, v.labels.result, v.value]);
    expect(reviews.sort()).toEqual(
      [
        ['', 'malformed', 1],
        ['', 'unauthorized', 1],
        ['DELETE', 'allowed', 1],
        ['DELETE', 'denied', 1],
        ['DELETE', 'error', 1],
        ['DELETE', 'patched', 2],
      ].sort(),
    );
    const text = await registry.metrics();
    expect(text).toContain('ripple_admission_review_duration_seconds_count{webhook="writes.test.ripple.dev",operation="DELETE"} 5');
    expect(text).toContain('ripple_admission_reviews_in_flight{webhook="writes.test.ripple.dev"} 0');
  });
});
