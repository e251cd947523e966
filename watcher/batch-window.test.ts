import { Gauge, Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../base/log.js';
import { BatchWindow } from './batch-window.js';

const log = createLogger('batch-window-test', 'silent');

describe('BatchWindow', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('enqueues a key once when its window ends, however many events came in it, and never before', async () => {
    const calls: string[] = [];
    const w = new BatchWindow({ enqueue: async (fn, key, reason) => void calls.push(`${fn}:${key}:${reason}`), isLeader: () => true, log });
    w.add('f', 'ns/a', 'Pod:MODIFIED', 100);
    w.add('g', 'ns/a', 'Pod:ADDED', 100);
    await vi.advanceTimersByTimeAsync(50);
    w.add('f', 'ns/a', 'Pod:MODIFIED', 100);
    await vi.advanceTimersByTimeAsync(49);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.sort()).toEqual(['f:ns/a:Pod:MODIFIED', 'g:ns/a:Pod:ADDED']);
    // A later event opens a new window.
    w.add('f', 'ns/a', 'Pod:MODIFIED', 100);
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toHaveLength(3);
  });

  it('retries an enqueue that failed, with backoff, folding the events that came meanwhile into the retry', async () => {
    let failures = 2;
    const calls: number[] = [];
    const w = new BatchWindow({
      enqueue: async () => {
        calls.push(Date.now());
        if (failures-- > 0) throw new Error('Connection is closed.');
      },
      isLeader: () => true,
      log,
      backoff: { initialMs: 10, maxMs: 20, resetAfterMs: 60_000 },
    });
    w.add('f', 'ns/a', 'r', 5);
    await vi.advanceTimersByTimeAsync(5);
    expect(calls).toHaveLength(1);
    w.add('f', 'ns/a', 'r', 5); // folds into the retry
    expect(w.size).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toHaveLength(3);
    expect(w.size).toBe(0);
  });

  it('gives a key up after maxAttempts failures of its own, and says so', async () => {
    const given: string[] = [];
    let calls = 0;
    const w = new BatchWindow({
      enqueue: async () => {
        calls++;
        throw new Error('ERR refused');
      },
      isLeader: () => true,
      log,
      maxAttempts: 3,
      backoff: { initialMs: 1, maxMs: 2, resetAfterMs: 60_000 },
      onGiveUp: (fn, key) => given.push(`${fn}:${key}`),
    });
    w.add('f', 'ns/a', 'r', 1);
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toBe(3);
    expect(given).toEqual(['f:ns/a']);
    expect(w.size).toBe(0);
  });

  it('drops a window that ends while this watcher follows (the leader replays), and enqueues nothing', async () => {
    const calls: string[] = [];
    const w = new BatchWindow({ enqueue: async (fn, key) => void calls.push(`${fn}:${key}`), isLeader: () => false, log });
    w.add('f', 'ns/a', 'r', 10);
    await vi.advanceTimersByTimeAsync(20);
    expect(calls).toEqual([]);
    expect(w.size).toBe(0);
  });

  it('stop() enqueues every open window at once and takes no more', async () => {
    const calls: string[] = [];
    const w = new BatchWindow({ enqueue: async (fn, key) => void calls.push(`${fn}:${key}`), isLeader: () => true, log });
    w.add('f', 'ns/a', 'r', 60_000);
    w.add('f', 'ns/b', 'r', 60_000);
    await w.stop();
    w.add('f', 'ns/c', 'r', 1);
    await vi.advanceTimersByTimeAsync(10);
    expect(calls.sort()).toEqual(['f:ns/a', 'f:ns/b']);
  });

  it('keeps ripple_watch_batched_keys at the number of open windows per function', async () => {
    const gauge = new Gauge({ name: 'batched', help: 'test', labelNames: ['function'], registers: [new Registry()] });
    const open = async () => Object.fromEntries((await gauge.get()).values.map((v) => [v.labels.function, v.value]));
    let fail = true;
    const w = new BatchWindow({
      enqueue: async () => {
        if (fail) throw new Error('Connection is closed.');
      },
      isLeader: () => true,
      log,
      gauge,
      backoff: { initialMs: 10, maxMs: 10, resetAfterMs: 60_000 },
    });
    w.add('f', 'ns/a', 'r', 5);
    w.add('f', 'ns/a', 'r', 5);
    w.add('f', 'ns/b', 'r', 5);
    w.add('g', 'ns/a', 'r', 5);
    expect(await open()).toEqual({ f: 2, g: 1 });
    // The enqueues fail: the windows stay open for their retries.
    await vi.advanceTimersByTimeAsync(5);
    expect(await open()).toEqual({ f: 2, g: 1 });
    fail = false;
    await vi.advanceTimersByTimeAsync(20);
    expect(await open()).toEqual({ f: 0, g: 0 });
    w.add('f', 'ns/c', 'r', 60_000);
    await w.stop();
    expect(await open()).toEqual({ f: 0, g: 0 });
  });
});
