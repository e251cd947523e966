import { Agent, request } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { EMIT_EVENTS, eventRequestsKey } from '../../runtime/event-sink.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { FunctionHost } from '../../runtime/host.js';
import { allowUnauthenticatedFromEnv, serveFunction, type ServedFunction, type ServeOptions } from '../../runtime/http-function.js';
import { createLogger, type Logger } from '../../base/log.js';
import { definitions } from '../fixtures/http-functions.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// A function served over HTTP (the `ripple serve` transport) against the real API server and Redis:
// the three request forms reach the same handler through the same context a queue worker gives it.
const log = createLogger('http-function-test', process.env.LOG_LEVEL ?? 'warn');
/** What every function here requires, as `ripple serve` does (RIPPLE_FUNCTION_TOKEN). */
const TOKEN = 'function-token-for-tests-0123456789';
let sb: TestSandbox;
let host: FunctionHost;
const servers: ServedFunction[] = [];

function def(name: string): FunctionDefinition {
  return host.definition(name);
}

type ServeExtra = Partial<Pick<ServeOptions, 'token' | 'allowUnauthenticated' | 'maxInflight' | 'log' | 'lingerMs'>>;

function serveOptions(name: string, extra: ServeExtra) {
  const d = def(name);
  return { def: d, run: (info: Parameters<FunctionHost['runHandler']>[1]) => host.runHandler(d, info), redis: host.redis, prefix: host.prefix, log, registry: new Registry(), port: 0, hostname: '127.0.0.1', token: TOKEN, ...extra };
}

async function serve(name: string, extra: ServeExtra = {}): Promise<{ url: string; served: ServedFunction }> {
  const served = await serveFunction(serveOptions(name, extra));
  servers.push(served);
  return { url: `http://127.0.0.1:${served.port}`, served };
}

/** POSTs with the token (as the dispatcher does) unless the headers bring their own authorization. */
async function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, ...headers }, body });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** A logger whose lines a test can read back. */
function capturingLogger(): { log: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      out.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

async function mirrorData(name: string): Promise<Record<string, string> | undefined> {
  try {
    return (await sb.core.readNamespacedConfigMap({ namespace: sb.namespace, name: `${name}-mirror` })).data;
  } catch {
    return undefined;
  }
}

async function deleteMirror(name: string): Promise<void> {
  await sb.core.deleteNamespacedConfigMap({ namespace: sb.namespace, name: `${name}-mirror` }).catch(() => undefined);
  await waitFor('the mirror to be gone', 10_000, async () => (await mirrorData(name)) === undefined);
}

beforeAll(async () => {
  sb = await openSandbox('httpfn');
  host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: definitions({ SLOW_MS: '1500' }), log, namespace: sb.namespace });
});
afterAll(async () => {
  for (const s of servers.splice(0)) await s.close();
  await host.close();
  await sb.cleanup();
});

describe('HTTP functions', () => {
  it('the same reconcile through JSON, a binary CloudEvent and a structured CloudEvent gives the same result', async () => {
    const { url } = await serve('configmap-mirror');
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'src' }, data: { value: 'v1', requeueAfterMs: '1500' } } });
    const key = `${sb.namespace}/src`;

    const forms: Array<{ mode: string; headers: Record<string, string>; body: string }> = [
      { mode: 'json', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key }) },
      {
        mode: 'binary',
        headers: { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': 'evt-1', 'ce-source': '/test', 'ce-type': 'dev.ripple.reconcile', 'ce-subject': key },
        body: JSON.stringify({ key }),
      },
      {
        mode: 'structured',
        headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
        body: JSON.stringify({ specversion: '1.0', id: 'evt-2', source: '/test', type: 'dev.ripple.reconcile', datacontenttype: 'application/json', data: { namespace: sb.namespace, name: 'src' } }),
      },
      // What Knative's ApiServerSource sends: the object itself as the data.
      {
        mode: 'binary, Kubernetes object as data',
        headers: { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': 'evt-3', 'ce-source': 'https://10.0.0.1', 'ce-type': 'dev.knative.apiserver.resource.update' },
        body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'src', namespace: sb.namespace }, data: { value: 'stale payload: ignored' } }),
      },
      // A binary CloudEvent without data names the key in its subject.
      {
        mode: 'binary, subject only',
        headers: { 'ce-specversion': '1.0', 'ce-id': 'evt-4', 'ce-source': '/test', 'ce-type': 'dev.ripple.reconcile', 'ce-subject': key },
        body: '',
      },
    ];
    const results: Array<{ mode: string; requeueAfterMs: unknown; data: Record<string, string> | undefined }> = [];
    for (const form of forms) {
      await deleteMirror('src');
      const res = await post(url, form.headers, form.body);
      expect(res.status, `${form.mode}: ${JSON.stringify(res.json)}`).toBe(200);
      expect(res.json.status).toBe('success');
      expect(res.json.key).toBe(key);
      results.push({ mode: form.mode, requeueAfterMs: res.json.requeueAfterMs, data: await mirrorData('src') });
    }
    const expected = { value: 'v1', key, namespace: sb.namespace, name: 'src', prefix: sb.prefix };
    for (const r of results) {
      expect(r.data, r.mode).toEqual(expected);
      expect(r.requeueAfterMs, r.mode).toBe(1500);
    }
    // The CloudEvent id is the reconcile id, so the caller's and the function's log lines correlate.
    const binary = await post(url, forms[1]!.headers, forms[1]!.body);
    expect(binary.json.reconcileId).toBe('evt-1');

    // The context is the host's: events went to emit-events' list and queue under the same prefix.
    const requests = await sb.redis.lrange(eventRequestsKey(sb.prefix, `${sb.namespace}/ConfigMap/src`), 0, -1);
    expect(requests.length).toBeGreaterThanOrEqual(forms.length);
    expect(await host.queue(EMIT_EVENTS).bull.getJobCounts('waiting', 'delayed')).toMatchObject({ waiting: 1 });

    // And a queue worker running the same definition produces the same mirror.
    await deleteMirror('src');
    const workerHost = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: definitions(), log, namespace: sb.namespace });
    try {
      workerHost.startWorkers(['configmap-mirror']);
      await workerHost.enqueue('configmap-mirror', key, 'test');
      const viaQueue = await waitFor('the worker to mirror', 15_000, () => mirrorData('src'));
      expect(viaQueue).toEqual(expected);
    } finally {
      await workerHost.close();
    }
  });

  it('a transient error answers 500, a terminal error 422, a missing object 200', async () => {
    const { url } = await serve('configmap-mirror');
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'flaky' }, data: { fail: 'transient' } } });
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'bad' }, data: { fail: 'terminal' } } });
    const json = { 'content-type': 'application/json' };

    const transient = await post(url, json, JSON.stringify({ key: `${sb.namespace}/flaky` }));
    expect(transient.status).toBe(500);
    expect(transient.json).toMatchObject({ status: 'error', key: `${sb.namespace}/flaky` });

    const terminal = await post(url, { 'content-type': 'application/cloudevents+json' }, JSON.stringify({ specversion: '1.0', id: 'x', source: '/t', type: 't', subject: `${sb.namespace}/bad` }));
    expect(terminal.status).toBe(422);
    expect(terminal.json).toMatchObject({ status: 'terminal', reason: 'InvalidValue', error: 'spec.value must not be empty (simulated)' });

    const gone = await post(url, json, JSON.stringify({ key: `${sb.namespace}/never-existed` }));
    expect(gone.status).toBe(200);
    expect(gone.json.requeueAfterMs).toBeUndefined();
  });

  it('a malformed request answers 400 (415 for a batch) with a message saying what is wrong', async () => {
    const { url } = await serve('configmap-mirror');
    const cases: Array<{ what: string; headers: Record<string, string>; body: string; status: number; message: RegExp }> = [
      { what: 'invalid JSON', headers: { 'content-type': 'application/json' }, body: '{"key": ', status: 400, message: /not valid JSON/ },
      { what: 'empty body', headers: { 'content-type': 'application/json' }, body: '', status: 400, message: /empty body/ },
      { what: 'wrong shape', headers: { 'content-type': 'application/json' }, body: '{"object": "x"}', status: 400, message: /expected \{"key"/ },
      { what: 'empty key', headers: { 'content-type': 'application/json' }, body: '{"key": ""}', status: 400, message: /expected \{"key"/ },
      {
        what: 'binary CloudEvent without ce-id',
        headers: { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-source': '/t', 'ce-type': 't' },
        body: '{"key": "a/b"}',
        status: 400,
        message: /ce-id/,
      },
      {
        what: 'structured CloudEvent 0.3',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '0.3', id: 'x', source: '/t', type: 't', data: { key: 'a/b' } }),
        status: 400,
        message: /specversion must be "1.0"/,
      },
      {
        what: 'structured CloudEvent without data or subject',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id: 'x', source: '/t', type: 't' }),
        status: 400,
        message: /no data and no subject/,
      },
      { what: 'batched CloudEvents', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: '[]', status: 415, message: /batched/ },
    ];
    for (const c of cases) {
      const res = await post(url, c.headers, c.body);
      expect(res.status, c.what).toBe(c.status);
      expect(res.json.status, c.what).toBe('invalid');
      expect(String(res.json.error), c.what).toMatch(c.message);
    }
  });

  it('never runs one key twice at once: a concurrent request for the same key answers 429', async () => {
    const { url } = await serve('slow');
    const json = { 'content-type': 'application/json' };
    const first = post(url, json, JSON.stringify({ key: 'ns/one' }));
    await waitFor('the first reconcile to start', 5000, async () => (await sb.redis.lrange(`${sb.prefix}:slow:started`, 0, -1)).includes('ns/one'));
    const second = await post(url, json, JSON.stringify({ key: 'ns/one' }));
    expect(second.status).toBe(429);
    expect(second.json.status).toBe('busy');
    const other = post(url, json, JSON.stringify({ key: 'ns/other' })); // another key is not held up
    expect((await first).status).toBe(200);
    expect((await other).status).toBe(200);
    // Released afterwards: the key can run again.
    expect((await post(url, json, JSON.stringify({ key: 'ns/one' }))).status).toBe(200);
  });

  it('serves of-watchdog health paths; on close it turns unready, finishes the running reconcile, then stops', async () => {
    const { url, served } = await serve('slow');
    expect((await fetch(`${url}/_/health`)).status).toBe(200);
    expect((await fetch(`${url}/_/ready`)).status).toBe(200);
    const running = post(url, { 'content-type': 'application/json' }, JSON.stringify({ key: 'ns/drain' }));
    await waitFor('the reconcile to start', 5000, async () => (await sb.redis.lrange(`${sb.prefix}:slow:started`, 0, -1)).includes('ns/drain'));
    const closing = served.close();
    const ready = await fetch(`${url}/_/ready`);
    expect(ready.status).toBe(503);
    const refused = await post(url, { 'content-type': 'application/json' }, JSON.stringify({ key: 'ns/late' }));
    expect(refused.status).toBe(503);
    expect(refused.json.status).toBe('draining');
    const res = await running;
    expect(res.status).toBe(200);
    await closing;
    expect(await sb.redis.lrange(`${sb.prefix}:slow:finished`, 0, -1)).toContain('ns/drain');
  });

  it('after its drain it lingers while a client holds a kept-alive connection: a call sent on it then is answered draining (closing the connection), never reset', async () => {
    // The dispatcher keeps connections to a function pod alive. A server that closes an idle one as its drain ends
    // races the client's next call on it: a reset, which the client cannot tell from a pod that died mid-call, so it
    // spends a retry (issue 29's case (d), once in five runs).
    const { url, served } = await serve('slow', { lingerMs: 8_000 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const call = (key: string) =>
      new Promise<{ status: number; connection: string | undefined; reused: boolean; body: string }>((resolve, reject) => {
        const req = request(`${url}/`, { method: 'POST', agent, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, reused: req.reusedSocket, body }));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ key }));
      });
    try {
      // A finished call leaves its connection idle in the client's pool.
      await fetch(`${url}/_/health`);
      expect((await call('ns/keep')).status).toBe(200);
      const running = post(url, { 'content-type': 'application/json' }, JSON.stringify({ key: 'ns/linger' }));
      await waitFor('the reconcile to start', 5000, async () => (await sb.redis.lrange(`${sb.prefix}:slow:started`, 0, -1)).includes('ns/linger'));
      let closed = false;
      const closing = served.close().then(() => void (closed = true));
      expect((await running).status).toBe(200);
      // The drain is over: the call goes on the pooled connection, as the dispatcher's next call would.
      const late = await call('ns/after-drain');
      expect({ status: late.status, connection: late.connection, reused: late.reused, body: JSON.parse(late.body) as unknown }).toMatchObject({
        status: 503,
        connection: 'close',
        reused: true,
        body: { status: 'draining' },
      });
      expect(closed).toBe(false);
      // Its connection ended with that answer; fetch's idle connection ends by fetch's own keep-alive timeout.
      await closing;
      expect(await sb.redis.lrange(`${sb.prefix}:slow:started`, 0, -1)).not.toContain('ns/after-drain');
    } finally {
      agent.destroy();
    }
  });

  it('a client that keeps calling on its connection while it shuts down cannot keep it alive: the connection ends with its answer, and it closes', async () => {
    // Seen in the serverless bench: a pod scaled down while the dispatcher called it every 2 s on one kept-alive
    // connection answered `draining` on that connection for its whole grace period (90 s), and every call bounced
    // off it instead of reaching the ready pod beside it: the server's close waited for a connection that never idled.
    const lingerMs = 1_000;
    const { url, served } = await serve('slow', { lingerMs });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const outcomes: string[] = [];
    let calling = true;
    const caller = (async () => {
      while (calling) {
        outcomes.push(
          await new Promise<string>((resolve) => {
            const req = request(`${url}/`, { method: 'POST', agent, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } }, (res) => {
              res.resume();
              res.on('end', () => resolve(String(res.statusCode)));
            });
            req.on('error', (err: Error & { code?: string }) => resolve(err.code ?? err.message));
            req.end(JSON.stringify({ key: `ns/call-${outcomes.length}` }));
          }),
        );
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      // Closed while the client's first call runs on its one connection: that connection is busy as the drain ends.
      const keys = () => sb.redis.lrange(`${sb.prefix}:slow:started`, 0, -1);
      await waitFor('the first call to start', 5_000, async () => (await keys()).includes('ns/call-0'));
      const began = Date.now();
      await Promise.race([served.close(), new Promise((_, reject) => setTimeout(() => reject(new Error('close() did not end while a client kept calling')), lingerMs + 5_000))]);
      const tookMs = Date.now() - began;
      calling = false;
      await caller;
      expect(tookMs).toBeLessThan(lingerMs + 5_000);
      // Before the close: reconciled (200); during it: draining (503); after it: nothing listens (refused). Never a reset.
      expect(outcomes[0]).toBe('200');
      expect(outcomes.filter((o) => !['200', '503', 'ECONNREFUSED'].includes(o))).toEqual([]);
    } finally {
      calling = false;
      agent.destroy();
    }
  });

  it('a request without the function token answers 401', async () => {
    const token = 'function-token-0123456789abcdef';
    const { url } = await serve('slow', { token });
    const body = JSON.stringify({ key: 'ns/requeue' });
    const without = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(without.status).toBe(401);
    expect(without.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await post(url, { 'content-type': 'application/json', authorization: 'Bearer nope-nope-nope-nope' }, body);
    expect(wrong.status).toBe(401);
    const right = await post(url, { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body);
    expect(right.status).toBe(200);
    expect(right.json.requeueAfterMs).toBe(60_000);
  });

  it('refuses to start without a token unless RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true', async () => {
    await expect(serveFunction(serveOptions('slow', { token: undefined, allowUnauthenticated: false }))).rejects.toThrow(
      /refusing to serve slow without RIPPLE_FUNCTION_TOKEN/,
    );
    const { url } = await serve('slow', { token: undefined, allowUnauthenticated: true });
    const open = await fetch(url, { method: 'POST', body: JSON.stringify({ key: 'ns/requeue' }) });
    expect(open.status).toBe(200);
    // How `ripple serve` reads the opt-out: only the literal "true", anything but true/false refused.
    expect(allowUnauthenticatedFromEnv({ RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: 'true' })).toBe(true);
    expect(allowUnauthenticatedFromEnv({ RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: 'false' })).toBe(false);
    expect(allowUnauthenticatedFromEnv({})).toBe(false);
    expect(() => allowUnauthenticatedFromEnv({ RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: '1' })).toThrow(/must be "true" or "false"/);
  });

  it('a 500 says only where the cause is logged: the request id in the body is the one on the log line', async () => {
    const captured = capturingLogger();
    const { url } = await serve('configmap-mirror', { log: captured.log });
    // The cause quotes a URL with credentials, as a Prometheus or Redis error may.
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'leaky' }, data: { fail: 'leaky' } } });
    const res = await post(url, { 'content-type': 'application/json' }, JSON.stringify({ key: `${sb.namespace}/leaky` }));
    expect(res.status).toBe(500);
    const requestId = String(res.json.requestId);
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.json.error).toBe(`reconcile failed; the function logged the cause with requestId ${requestId}`);
    expect(JSON.stringify(res.json)).not.toMatch(/simulated|hunter2|prometheus/);
    // The log has the cause, and even there the URL has lost its credentials.
    const line = captured.lines().find((l) => l.requestId === requestId);
    expect(line).toMatchObject({
      err: 'cannot reach Prometheus at http://[redacted]@prometheus:9090 (simulated)',
      key: `${sb.namespace}/leaky`,
      msg: 'reconcile failed; answering 500 so the caller retries',
    });
  });
});
