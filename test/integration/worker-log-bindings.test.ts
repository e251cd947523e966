import { Writable } from 'node:stream';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { FunctionDefinition } from '../../runtime/function.js';
import { FunctionHost } from '../../runtime/host.js';
import { waitFor } from '../harness/sandbox.js';

// A reconcile's log lines name their function once: a collector that parses the JSON keeps one value per key,
// and a line that says `"function"` twice (the host bound it, then the worker again) reads as noise at a terminal.
const lines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    lines.push(...chunk.toString().split('\n').filter(Boolean));
    done();
  },
});
const fn: FunctionDefinition = {
  name: 'log-bindings',
  triggers: [],
  reconcile: async (req, ctx) => {
    ctx.log.info({ seen: req.key }, 'reconciling');
  },
};
const host = new FunctionHost({ kc: new KubeConfig(), redisUrl: inject('redisUrl'), prefix: `ripple-test-logs-${Date.now()}`, functions: [fn], log: pino({ level: 'info' }, sink) });
afterAll(() => host.close());

describe("a reconcile's logger", () => {
  it('binds the function, the key and the reconcile id once each', async () => {
    host.startWorkers([fn.name]);
    await host.enqueue(fn.name, 'ns/a', 'test');
    const line = await waitFor('the reconcile to log', 15_000, async () => lines.find((l) => l.includes('"reconciling"')));
    for (const field of ['function', 'key', 'reconcileId']) expect(line.split(`"${field}":`).length - 1, `${field} in ${line}`).toBe(1);
    expect(JSON.parse(line)).toMatchObject({ function: fn.name, key: 'ns/a', seen: 'ns/a' });
  });
});
