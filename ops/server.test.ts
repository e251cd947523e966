import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { opsApp } from './server.js';

describe('ops server errors', () => {
  it('a 500 answers with a request id, never the cause; the log line has both, without URL credentials', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const app = opsApp({
      registry: new Registry(),
      live: () => {
        throw new Error('cannot reach redis://:hunter2@redis:6379');
      },
      ready: async () => [],
      log: pino({ level: 'info' }, stream),
    });
    const res = await app.request('/healthz');
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: string; requestId: string };
    expect(body.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.error).toBe(`internal error; the ops server logged the cause with requestId ${body.requestId}`);
    expect(JSON.stringify(body)).not.toMatch(/hunter2|redis/);
    expect(lines.find((l) => l.requestId === body.requestId)).toMatchObject({ err: 'cannot reach redis://[redacted]@redis:6379', path: '/healthz' });
  });

  it('keeps the answers that say what to fix (readiness problems)', async () => {
    const app = opsApp({ registry: new Registry(), live: () => [], ready: async () => ['redis: no answer to PING within 2000 ms'] });
    const res = await app.request('/readyz');
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ ready: false, problems: ['redis: no answer to PING within 2000 ms'] });
  });
});
