import { spawn } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ReconcileInfo } from '../queue/worker.js';
import { ConnectivityError } from '../base/errors.js';
import { httpReconcile, UndeliveredError } from './dispatcher.js';

/** A loopback port nothing listens on: bound, read, closed. A connect to it is refused by the kernel. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address.port;
}

const info = (): ReconcileInfo => ({ key: 'ns/a', reconcileId: 'r-1', reason: 'test', log: pino({ level: 'silent' }), token: '1', signal: new AbortController().signal });

describe('httpReconcile on a refused connection', () => {
  it('without onUndelivered: a transient failure, as before (Knative, OpenFaaS)', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const err = await httpReconcile({ fn: 'f', url, timeoutMs: 2_000 })(info()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UndeliveredError);
    expect(err).toBeInstanceOf(ConnectivityError);
    expect(String(err)).toMatch(/ECONNREFUSED|connect/);
  });

  it('with onUndelivered: the job goes back unrun, and the hold is told', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    let told = 0;
    const outcome = await httpReconcile({ fn: 'f', url, timeoutMs: 2_000, onUndelivered: () => void told++ })(info());
    expect(outcome).toEqual({ unrun: true });
    expect(told).toBe(1);
  });

  it('a call that reached a server and failed stays a failure, with onUndelivered too', async () => {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    try {
      let told = 0;
      const err = await httpReconcile({ fn: 'f', url: `http://127.0.0.1:${address.port}`, timeoutMs: 2_000, onUndelivered: () => void told++ })(info()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConnectivityError);
      expect(err).not.toBeInstanceOf(UndeliveredError);
      expect(told).toBe(0);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('a pod that answers it is draining (503, `ripple serve` shutting down) ran nothing: unrun with onUndelivered, a failure without', async () => {
    const server = createHttpServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'draining', error: 'shutting down; retry on another replica' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    try {
      const url = `http://127.0.0.1:${address.port}`;
      let told = 0;
      expect(await httpReconcile({ fn: 'f', url, timeoutMs: 2_000, onUndelivered: () => void told++ })(info())).toEqual({ unrun: true });
      expect(told).toBe(1);
      const err = await httpReconcile({ fn: 'f', url, timeoutMs: 2_000 })(info()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConnectivityError);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

/**
 * A loopback port whose connects hang: a listener (backlog 1) in a child process whose event loop is blocked, so it
 * never accepts. The kernel completes connections into the accept queue until it is full (made here), then drops
 * every further SYN, as a black-holed address does: a client's connect waits for its own timeout.
 */
async function hangingPort(): Promise<{ port: number; stop: () => void }> {
  const child = spawn(
    process.execPath,
    ['-e', "const s=require('net').createServer();s.listen({port:0,host:'127.0.0.1',backlog:1},()=>{console.log(s.address().port);Atomics.wait(new Int32Array(new SharedArrayBuffer(4)),0,0)})"],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`the listener exited (${code})`)));
  });
  const sockets: Socket[] = [];
  const stop = (): void => {
    for (const s of sockets) s.destroy();
    child.kill('SIGKILL');
  };
  // Fill the queue: connect until a connect does not complete (Linux queues backlog + 1).
  for (let i = 0; i < 8; i++) {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    const connected = await new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(true)).once('error', () => resolve(false));
      setTimeout(() => resolve(false), 500);
    });
    if (!connected) return { port, stop };
  }
  stop();
  throw new Error(`every connect to 127.0.0.1:${port} completed: the accept queue never filled`);
}

describe('httpReconcile on a connect that hangs', () => {
  it('gives up after its connect timeout (2 s, not undici\'s 10 s) and the job goes back unrun', async () => {
    const { port, stop } = await hangingPort();
    try {
      let told = 0;
      const started = Date.now();
      const outcome = await httpReconcile({ fn: 'f', url: `http://127.0.0.1:${port}`, timeoutMs: 30_000, onUndelivered: () => void told++ })(info());
      const tookMs = Date.now() - started;
      expect(outcome).toEqual({ unrun: true });
      expect(told).toBe(1);
      expect(tookMs).toBeGreaterThanOrEqual(1_900);
      expect(tookMs).toBeLessThan(6_000);
    } finally {
      stop();
    }
  }, 20_000);
});
