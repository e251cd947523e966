import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { kubeRequest } from '../../kube/raw.js';
import { fencedWrite } from '../../queue/fenced-write.js';
import { queueKeys } from '../../queue/keys.js';
import { runScript } from '../../queue/run-script.js';
import { CLAIM } from '../../queue/scripts.js';
import { parseClaim } from '../../queue/worker.js';
import type { FunctionDefinition, HandlerContext } from '../../runtime/function.js';
import { FunctionHost } from '../../runtime/host.js';
import { serveFunction, type ServedFunction } from '../../runtime/http-function.js';
import { createLogger } from '../../base/log.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// Issue 28, item 4: the HTTP-function mode keeps the queue's contract. A `ripple serve` replica paused past its
// key lease resumes straight into a write: the write is not sent (its lease's end is checked by the clock, as a
// worker's is), and a state write carrying the dispatcher's claim token is refused in Redis once that claim has
// moved on. Real API server, real Redis, the real HTTP transport.
const log = createLogger('http-function-fencing-test', process.env.LOG_LEVEL ?? 'warn');
const TOKEN = 'function-token-for-tests-0123456789';
const FN = 'fenced-fn';
let sb: TestSandbox;
let host: FunctionHost;
let served: ServedFunction;
const blocker = new Int32Array(new SharedArrayBuffer(4));
/** What the next reconcile does after reading its ConfigMap: block the loop (a pause), then write. */
let pauseMs = 0;
let stateToken = '';

const cmSchema = z.object({ metadata: z.object({ resourceVersion: z.string() }), data: z.record(z.string(), z.string()).optional() });

async function reconcile(req: { key: string; namespace?: string; name: string }, ctx: HandlerContext): Promise<void> {
  const path = `/api/v1/namespaces/${req.namespace}/configmaps/${req.name}`;
  const read = cmSchema.parse(await kubeRequest(ctx.kc, path));
  if (pauseMs > 0) Atomics.wait(blocker, 0, 0, pauseMs);
  // Straight into the writes, no await in between: the API write, then the handler's state.
  await kubeRequest(ctx.kc, path, { method: 'PUT', body: { metadata: { name: req.name, resourceVersion: read.metadata.resourceVersion }, data: { by: ctx.token || 'no-token' } } });
  await ctx.state.write([{ command: 'HSET', key: ctx.state.key('effects'), args: [req.key, ctx.token] }]);
  stateToken = ctx.token;
}

const definition: FunctionDefinition = { name: FN, triggers: [], reconcile: (req, ctx) => reconcile(req, ctx) };

beforeAll(async () => {
  sb = await openSandbox('http-fencing');
  host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: [definition], log });
  served = await serveFunction({ def: definition, run: (info) => host.runHandler(definition, info), redis: host.redis, prefix: host.prefix, log, port: 0, hostname: '127.0.0.1', token: TOKEN, leaseMs: 600 });
});
afterAll(async () => {
  await served.close();
  await host.close();
  await sb.cleanup();
});

async function createConfigMap(name: string): Promise<void> {
  await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/configmaps`, { method: 'POST', body: { metadata: { name }, data: { by: 'nobody' } } });
}
async function configMapBy(name: string): Promise<string | undefined> {
  return cmSchema.parse(await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/configmaps/${name}`)).data?.by;
}
async function post(body: Record<string, unknown>): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${served.port}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.text();
  return res.status;
}
/** A queue claim on the key, as the dispatcher holds while it calls the function. */
async function claim(key: string, leaseMs: number): Promise<string> {
  const keys = queueKeys(sb.prefix, FN);
  const scriptKeys = [keys.pending, keys.due, keys.active, keys.dirty, keys.failures, keys.seq, keys.pendingSince, keys.leases, keys.released, keys.versions];
  const verdict = parseClaim(await runScript(sb.redis, CLAIM, scriptKeys, [key, `${key}#${Date.now()}`, keys.jobKeyPrefix, String(leaseMs)]));
  if (verdict.verdict !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(verdict)}`);
  return verdict.token;
}

describe('a ripple serve replica', () => {
  it('paused past its key lease sends no write when it resumes, and answers an error so the dispatcher retries', async () => {
    await createConfigMap('paused');
    const token = await claim(`${sb.namespace}/paused`, 30_000);
    pauseMs = 1_500;
    const status = await post({ key: `${sb.namespace}/paused`, fencingToken: token });
    pauseMs = 0;
    expect(status).toBe(500);
    expect(await configMapBy('paused')).toBe('nobody');
  });

  it("writes its state under the dispatcher's claim token, refused in Redis once that claim moved on", async () => {
    await createConfigMap('fenced');
    const key = `${sb.namespace}/fenced`;
    const token = await claim(key, 30_000);
    expect(await post({ key, fencingToken: token })).toBe(200);
    expect(stateToken).toBe(token);
    expect(await configMapBy('fenced')).toBe(token);
    // The dispatcher's claim ran out and the key was claimed again: a late request with the old token writes
    // nothing to the handler's state (LeaseLostError, answered 500).
    const keys = queueKeys(sb.prefix, FN);
    await sb.redis.zadd(keys.leases, 0, key);
    const newer = await claim(key, 30_000);
    expect(await post({ key, fencingToken: token })).toBe(500);
    expect(await sb.redis.hget(host.context(log, {}, FN).state.key('effects'), key)).toBe(token);
    await expect(fencedWrite(sb.redis, keys, key, newer, [{ command: 'HSET', key: host.context(log, {}, FN).state.key('effects'), args: [key, newer] }])).resolves.toBeDefined();
  });
});
