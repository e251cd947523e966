import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.js';
import { DeliveryPump, type DeliveryPumpOptions } from './delivery-pump.js';
import type { WatchEvent } from './events.js';
import { WatchMetrics } from './metrics.js';

// The pump with a consumer that fails on purpose: no cluster, no Redis, milliseconds of backoff.
const obj = (name: string, rv: string): KubeObject => ({ metadata: { name, namespace: 'ns', resourceVersion: rv, uid: `uid-${name}` } });
const create = (name: string): WatchEvent => ({ type: 'create', object: obj(name, '1') });
const fast = { initialMs: 5, maxMs: 20, resetAfterMs: 60_000 };
const pumps: DeliveryPump[] = [];
afterEach(async () => {
  for (const p of pumps.splice(0)) await p.stop();
});

function pump(over: Partial<DeliveryPumpOptions> & Pick<DeliveryPumpOptions, 'deliver'>) {
  const metrics = new WatchMetrics(new Registry());
  const status: string[] = [];
  const p = new DeliveryPump({
    resource: 'v1/ConfigMap',
    log: pino({ level: 'silent' }),
    backoff: fast,
    delivery: { maxAttempts: 3, keyBackoff: fast },
    metrics,
    onDown: (why) => void status.push(`down ${why}`),
    onUp: () => void status.push('up'),
    ...over,
  });
  pumps.push(p);
  return { p, metrics, status };
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const gauge = async (m: WatchMetrics) => (await m.buffered.get()).values[0]?.value ?? 0;

describe('DeliveryPump', () => {
  it('a poison key is dead-lettered after maxAttempts, reported once, while every other key is delivered', async () => {
    const delivered: string[] = [];
    const dead: Array<{ name: string; attempts: number; err: string }> = [];
    const { p, metrics } = pump({
      deliver: async (e) => {
        if (e.object.metadata.name === 'system:poison') throw new Error('Custom Id cannot contain :');
        delivered.push(e.object.metadata.name);
      },
      onDeadLetter: async (e, err, attempts) => void dead.push({ name: e.object.metadata.name, attempts, err: String(err) }),
    });
    p.push(create('system:poison'));
    for (let i = 0; i < 20; i++) p.push(create(`good-${i}`));
    await until('every good key and the dead letter', () => delivered.length === 20 && dead.length === 1);
    await p.drained();
    expect(dead).toEqual([{ name: 'system:poison', attempts: 3, err: 'Error: Custom Id cannot contain :' }]);
    expect((await metrics.deadLetters.get()).values[0]?.value).toBe(1);
    expect(p.buffered).toBe(0);
    expect(await gauge(metrics)).toBe(0);
  });

  it('while the consumer is down (transient errors) nothing is dropped, the backlog folds per key, and all of it arrives after', async () => {
    let down = true;
    const delivered: string[] = [];
    const dead: string[] = [];
    const { p, metrics, status } = pump({
      deliver: async (e) => {
        if (down) throw new Error('Connection is closed.');
        delivered.push(`${e.type}:${e.object.metadata.name}@${e.object.metadata.resourceVersion}`);
      },
      onDeadLetter: async (e) => void dead.push(e.object.metadata.name),
    });
    p.push(create('a'));
    p.push(create('b'));
    for (let rv = 2; rv <= 500; rv++) {
      p.push({ type: 'update', old: obj('a', String(rv - 1)), object: obj('a', String(rv)) });
      p.push({ type: 'update', old: obj('b', String(rv - 1)), object: obj('b', String(rv)) });
    }
    p.push({ type: 'delete', object: obj('b', '501'), synthetic: false });
    await until('a few failed attempts', () => status.length > 0);
    await new Promise((r) => setTimeout(r, 100)); // many more attempts than maxAttempts, all transient
    expect(p.buffered).toBe(2);
    expect(await gauge(metrics)).toBe(2);
    down = false;
    await until('the backlog', () => delivered.length === 2);
    expect(delivered.sort()).toEqual(['create:a@500', 'delete:b@501']);
    expect(dead).toEqual([]);
    expect(status.at(-1)).toBe('up');
    expect(await gauge(metrics)).toBe(0);
  });
});
