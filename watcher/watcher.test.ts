import { Writable } from 'node:stream';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { definition as opsLifecycle } from '../functions/ops-lifecycle/definition.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, CONTROL_LABEL } from '../functions/ops-lifecycle/protocol/index.js';
import { CONTROLLED_PODS_SELECTOR } from '../functions/ops-lifecycle/triggers.js';
import type { KubeObject } from '../kube/object.js';
import { Resources } from '../kube/resources.js';
import type { FunctionDefinition, Trigger } from '../runtime/function.js';
import { eventSinkOf } from '../runtime/events.js';
import type { WatchEvent } from './events.js';
import type { ListWatchOptions } from './list-watch.js';
import { mapToSelf } from './mappers.js';
import { keepFields, ONLY_METADATA } from './projection.js';
import { ObjectStore } from './store.js';
import { Watcher, type WatcherOptions, type WatchSource } from './watcher.js';

// The watcher's composition without a cluster: each list+watch is a plain store the test fills, and
// events are handed to the watcher the way ListWatch hands them (awaiting onEvent).

interface FakeSource extends WatchSource {
  opts: ListWatchOptions;
  /** Puts an object in the store and delivers its create, as a watch would. */
  add(obj: KubeObject): Promise<void>;
  deliver(event: WatchEvent): Promise<void>;
}

function capturingLog() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

function harness(functions: FunctionDefinition[], over: Partial<WatcherOptions> = {}) {
  const sources: FakeSource[] = [];
  const enqueued: string[] = [];
  const { log, lines } = capturingLog();
  const watcher = new Watcher({
    kc: new KubeConfig(),
    functions,
    enqueue: async (fn, key) => void enqueued.push(`${fn}:${key}`),
    isLeader: () => true,
    log,
    replayBackoff: { initialMs: 1, maxMs: 5, resetAfterMs: 60_000 },
    source: (opts) => {
      const store = new ObjectStore();
      const source: FakeSource = {
        opts,
        store,
        health: () => ({ resource: opts.resource.plural, up: true, synced: true, relists: 1 }),
        waitForSync: async () => undefined,
        stop: async () => undefined,
        add: async (obj) => {
          const event = store.apply('ADDED', obj);
          if (event) await opts.onEvent(event);
        },
        deliver: (event) => opts.onEvent(event),
      };
      sources.push(source);
      return source;
    },
    ...over,
  });
  watcher.start();
  const source = (plural: string, labelSelector?: string) => {
    const s = sources.find((x) => x.opts.resource.plural === plural && x.opts.labelSelector === labelSelector);
    if (!s) throw new Error(`no watch of ${plural} with selector ${labelSelector}`);
    return s;
  };
  return { watcher, source, enqueued, lines };
}

const cm = (name: string, labels?: Record<string, string>): KubeObject => ({
  metadata: { name, namespace: 'ns', resourceVersion: '1', uid: `uid-${name}`, labels },
});
const fn = (name: string, trigger: Partial<Trigger>): FunctionDefinition => ({
  name,
  triggers: [{ resource: Resources.configMap, map: mapToSelf, ...trigger }],
  reconcile: async () => undefined,
});

describe('Watcher dispatch', () => {
  it('a throwing predicate or mapper is logged with function, resource and key, and does not stop the others', async () => {
    const { source, enqueued, lines } = harness([
      fn('bad-predicate', {
        predicate: {
          create: () => {
            throw new Error('predicate bug');
          },
        },
      }),
      fn('bad-mapper', {
        map: () => {
          throw new Error('mapper bug');
        },
      }),
      fn('good', {}),
    ]);
    // Resolves: ListWatch would otherwise retry this event for ever and hold the stream.
    await expect(source('configmaps').add(cm('a'))).resolves.toBeUndefined();
    expect(enqueued).toEqual(['good:ns/a']);
    const errors = lines.filter((l) => l.level === 50);
    expect(errors.map((l) => [l.function, l.resource, l.key, l.event])).toEqual([
      ['bad-predicate', 'configmaps/v1', 'ns/a', 'create'],
      ['bad-mapper', 'configmaps/v1', 'ns/a', 'create'],
    ]);
    expect(String(errors[0]?.err)).toContain('predicate bug');
  });

  it('an enqueue failure still propagates, so ListWatch retries the event', async () => {
    const { source } = harness([fn('good', {})], {
      enqueue: async () => {
        throw new Error('redis down');
      },
    });
    await expect(source('configmaps').add(cm('a'))).rejects.toThrow('redis down');
  });

  it("one function's refused key does not cost the other functions their enqueue of the event; the refusal propagates", async () => {
    const enqueued: string[] = [];
    const { source } = harness([fn('refuses', {}), fn('takes', {})], {
      enqueue: async (f, key) => {
        if (f === 'refuses') throw new Error('Custom Id cannot contain :');
        enqueued.push(`${f}:${key}`);
      },
    });
    await expect(source('configmaps').add(cm('a'))).rejects.toThrow('Custom Id cannot contain :');
    expect(enqueued).toEqual(['takes:ns/a']);
  });

  it('a dead-lettered event becomes a Warning Event on its object, through the event sink', async () => {
    const emitted: unknown[] = [];
    const { source } = harness([fn('f', {})], { events: eventSinkOf(async (r) => void emitted.push(r)) });
    const obj = { ...cm('system:x'), apiVersion: 'v1', kind: 'ConfigMap' };
    await source('configmaps').opts.onDeadLetter!({ type: 'update', old: obj, object: obj }, new Error('Custom Id cannot contain :'), 5);
    expect(emitted).toEqual([
      {
        involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'system:x', uid: 'uid-system:x', resourceVersion: '1' },
        type: 'Warning',
        reason: 'WatchEventDropped',
        message: expect.stringContaining('after 5 attempts') as unknown,
        source: 'ripple-watcher',
      },
    ]);
  });
});

describe('Watcher.replayAll', () => {
  it('retries an object whose enqueue fails until it goes through, and replays every object', async () => {
    let failures = 0;
    const enqueued: string[] = [];
    let leader = false;
    const { watcher, source } = harness([fn('f', {})], {
      isLeader: () => leader,
      enqueue: async (f, key) => {
        if (key === 'ns/b' && failures < 3) {
          failures++;
          throw new Error('redis down');
        }
        enqueued.push(`${f}:${key}`);
      },
    });
    for (const name of ['a', 'b', 'c']) await source('configmaps').add(cm(name)); // followers only fill stores
    expect(enqueued).toEqual([]);
    leader = true;
    await expect(watcher.replayAll()).resolves.toBe(3);
    expect(failures).toBe(3);
    expect(enqueued.sort()).toEqual(['f:ns/a', 'f:ns/b', 'f:ns/c']);
  });

  it('gives up an object whose key the queue refuses (after the bounded attempts) and replays the rest', async () => {
    const enqueued: string[] = [];
    const emitted: string[] = [];
    let leader = false;
    const { watcher, source } = harness([fn('f', {})], {
      isLeader: () => leader,
      delivery: { maxAttempts: 3 },
      events: eventSinkOf(async (r) => void emitted.push(`${r.reason}:${r.involvedObject.name}`)),
      enqueue: async (f, key) => {
        if (key.includes(':')) throw new Error('Custom Id cannot contain :');
        enqueued.push(`${f}:${key}`);
      },
    });
    for (const name of ['a', 'system:b', 'c']) await source('configmaps').add(cm(name));
    leader = true;
    await expect(watcher.replayAll()).resolves.toBe(3);
    expect(enqueued.sort()).toEqual(['f:ns/a', 'f:ns/c']);
    expect(emitted).toEqual(['WatchEventDropped:system:b']);
  });

  it('with enqueueMany, hands each function its keys in one call; a batch that fails goes again object by object', async () => {
    const batches: string[] = [];
    const single: string[] = [];
    let failBatch = false;
    let leader = false;
    const { watcher, source } = harness([fn('f', {}), fn('g', {})], {
      isLeader: () => leader,
      enqueue: async (f, key) => void single.push(`${f}:${key}`),
      enqueueMany: async (f, keys, reason) => {
        if (failBatch) throw new Error('Connection is closed.');
        batches.push(`${f}:${reason}:${[...keys].sort().join(',')}`);
      },
    });
    for (const name of ['a', 'b', 'c']) await source('configmaps').add(cm(name));
    leader = true;
    await expect(watcher.replayAll()).resolves.toBe(3);
    expect(batches.sort()).toEqual(['f:ConfigMap:generic:ns/a,ns/b,ns/c', 'g:ConfigMap:generic:ns/a,ns/b,ns/c']);
    expect(single).toEqual([]);

    failBatch = true;
    await expect(watcher.replayAll()).resolves.toBe(3);
    expect(single.sort()).toEqual(['f:ns/a', 'f:ns/b', 'f:ns/c', 'g:ns/a', 'g:ns/b', 'g:ns/c']);
  });

  it('never rejects: it ends when leadership is lost, or when the watcher stops, while enqueue keeps failing', async () => {
    let leader = true;
    const { watcher, source } = harness([fn('f', {})], {
      isLeader: () => leader,
      enqueue: async () => {
        throw new Error('Connection is closed.'); // what ioredis says while Redis is down
      },
    });
    leader = false;
    await source('configmaps').add(cm('a'));
    leader = true;
    const lost = watcher.replayAll();
    setTimeout(() => (leader = false), 30);
    await expect(lost).resolves.toBe(0);

    leader = true;
    const stopped = watcher.replayAll();
    setTimeout(() => void watcher.stop(), 30);
    await expect(stopped).resolves.toBe(0);
  });
});

describe('MapContext.list', () => {
  const pod = (name: string, labels: Record<string, string>, annotations?: Record<string, string>): KubeObject => ({
    metadata: { name, namespace: 'ns', resourceVersion: '1', uid: `uid-${name}`, labels, annotations },
  });
  const podWatcher = (selector: string | undefined): FunctionDefinition => ({
    name: `pods-${selector ?? 'all'}`,
    triggers: [{ resource: Resources.pod, labelSelector: selector, predicate: { create: () => false }, map: mapToSelf }],
    reconcile: async () => undefined,
  });

  it("ops-lifecycle's Service mapper sees its own controlled Pods, whatever other Pod watches are listed before it", async () => {
    // Another function's Pod watch with another selector comes first: the store lookup must not answer from it.
    const { source, enqueued } = harness([podWatcher('modelserving.volcano.sh/name'), opsLifecycle({})]);
    const expecting = pod('a', { [CONTROL_LABEL]: 'true' }, { [AVAILABLE_CONDITIONS_ANNOTATION]: JSON.stringify({ expectedFinalizers: { 'Service/ns/web': 'prot.podopslifecycle.kusionstack.io/x' } }) });
    await source('pods', 'modelserving.volcano.sh/name').add(pod('ms-0', { 'modelserving.volcano.sh/name': 'm' }));
    await source('pods', CONTROLLED_PODS_SELECTOR).add(expecting);
    enqueued.length = 0;
    const svc: KubeObject = { metadata: { name: 'web', namespace: 'ns', resourceVersion: '2', uid: 'svc' } };
    await source('services').deliver({ type: 'delete', object: svc, synthetic: false });
    expect(enqueued).toEqual(['ops-lifecycle:ns/a']);
  });

  it('answers from the group with exactly the selector, else an unselected group filtered by it, else nothing', async () => {
    let lookups: Record<string, string[]> = {};
    const probe: FunctionDefinition = {
      name: 'probe',
      triggers: [
        {
          resource: Resources.configMap,
          map: (_e, ctx) => {
            const names = (objs: KubeObject[]) => objs.map((o) => o.metadata.name).sort();
            lookups = {
              exact: names(ctx.list(Resources.pod, 'ns', 'app=x')),
              filtered: names(ctx.list(Resources.pod, 'ns', 'tier in (web)')),
              all: names(ctx.list(Resources.pod, 'ns')),
              otherNamespace: names(ctx.list(Resources.pod, 'other')),
            };
            return [];
          },
        },
      ],
      reconcile: async () => undefined,
    };
    const { source } = harness([podWatcher('app=x'), podWatcher(undefined), probe]);
    await source('pods', 'app=x').add(pod('x1', { app: 'x' }));
    for (const [name, labels] of [['x1', { app: 'x' }], ['w1', { tier: 'web' }], ['d1', { tier: 'db' }]] as const) await source('pods', undefined).add(pod(name, labels));
    await source('configmaps').add(cm('trigger'));
    expect(lookups).toEqual({ exact: ['x1'], filtered: ['w1'], all: ['d1', 'w1', 'x1'], otherNamespace: [] });

    // Without an unselected watch, a query for everything or for another selector finds no store to answer.
    const only = harness([podWatcher('app=x'), probe]);
    await only.source('pods', 'app=x').add(pod('x1', { app: 'x' }));
    await only.source('configmaps').add(cm('trigger'));
    expect(lookups).toEqual({ exact: ['x1'], filtered: [], all: [], otherNamespace: [] });
  });

  it('a watch shared by several triggers keeps the union of their projections, and the whole object once one declares none', () => {
    const shared = harness([fn('a', { projection: ONLY_METADATA }), fn('b', { projection: keepFields('data') })]);
    expect(shared.source('configmaps').opts.projection).toEqual({ keep: ['data'] });
    const metadata = harness([fn('a', { projection: ONLY_METADATA }), fn('b', { projection: ONLY_METADATA })]);
    expect(metadata.source('configmaps').opts.projection).toEqual({ keep: [] });
    const whole = harness([fn('a', { projection: ONLY_METADATA }), fn('b', {})]);
    expect(whole.source('configmaps').opts.projection).toBeUndefined();
    // Another selector is another watch, with its own projection.
    const apart = harness([fn('a', { projection: ONLY_METADATA }), fn('b', { labelSelector: 'x=y' })]);
    expect(apart.source('configmaps').opts.projection).toEqual({ keep: [] });
    expect(apart.source('configmaps', 'x=y').opts.projection).toBeUndefined();
  });
});

describe('the resourceVersion handed with an enqueue (ReconcileRequest.minResourceVersion)', () => {
  const owned = (name: string, owner: string, resourceVersion: string): KubeObject => ({
    metadata: { name, namespace: 'ns', resourceVersion, uid: `uid-${name}`, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: owner, uid: `uid-${owner}`, controller: true }] },
  });

  it("goes only with keys of the event's own object on a trigger of the function's primary resource", async () => {
    const calls: string[] = [];
    const primaryFn: FunctionDefinition = {
      name: 'p',
      primary: Resources.configMap,
      // Its own ConfigMaps, and every ConfigMap event also maps to its owner (another object's key).
      triggers: [{ resource: Resources.configMap, map: (e) => [`ns/${e.object.metadata.name}`, ...(e.object.metadata.ownerReferences ?? []).map((r) => `ns/${r.name}`)] }],
      reconcile: async () => undefined,
    };
    const secondary: FunctionDefinition = { name: 's', primary: Resources.pod, triggers: [{ resource: Resources.configMap, map: mapToSelf }], reconcile: async () => undefined };
    const { source } = harness([primaryFn, secondary], { enqueue: async (f, key, _reason, rv) => void calls.push(`${f}:${key}@${rv ?? '-'}`) });
    await source('configmaps').add(owned('child', 'parent', '41'));
    expect(calls).toEqual(['p:ns/child@41', 'p:ns/parent@-', 's:ns/child@-']);
  });

  it("the replay's batches carry each key's version too", async () => {
    const got: string[] = [];
    let leader = false;
    const { watcher, source } = harness([{ ...fn('f', {}), primary: Resources.configMap }], {
      isLeader: () => leader,
      enqueueMany: async (f, keys, _reason, rvs) => void got.push(...keys.map((k, i) => `${f}:${k}@${rvs?.[i] ?? '-'}`)),
    });
    await source('configmaps').add({ metadata: { name: 'a', namespace: 'ns', resourceVersion: '7', uid: 'ua' } });
    await source('configmaps').add({ metadata: { name: 'b', namespace: 'ns', resourceVersion: '9', uid: 'ub' } });
    leader = true;
    await expect(watcher.replayAll()).resolves.toBe(2);
    expect(got.sort()).toEqual(['f:ns/a@7', 'f:ns/b@9']);
  });
});

describe("a trigger's batch window (Trigger.batchMs)", () => {
  it("folds a burst of events for one key into one enqueue when the window ends; triggers without one enqueue each at once", async () => {
    const calls: string[] = [];
    const batched = fn('batched', { batchMs: 40 });
    const { source, watcher } = harness([batched, fn('direct', {})], { enqueue: async (f, key) => void calls.push(`${f}:${key}`) });
    await source('configmaps').add(cm('a'));
    await source('configmaps').add({ ...cm('a'), metadata: { ...cm('a').metadata, resourceVersion: '2' } });
    await source('configmaps').add(cm('b'));
    // Nothing of the batched function yet: its windows are open.
    expect(calls).toEqual(['direct:ns/a', 'direct:ns/a', 'direct:ns/b']);
    expect(watcher.batched).toBe(2);
    await new Promise((r) => setTimeout(r, 80));
    expect(calls.filter((c) => c.startsWith('batched')).sort()).toEqual(['batched:ns/a', 'batched:ns/b']);
    expect(watcher.batched).toBe(0);
  });

  it("never holds a key that carries its object's version: on a primary trigger the object's own key goes at once", async () => {
    const calls: string[] = [];
    const primaryFn: FunctionDefinition = {
      name: 'p',
      primary: Resources.configMap,
      triggers: [{ resource: Resources.configMap, batchMs: 60_000, map: (e) => [`ns/${e.object.metadata.name}`, 'ns/other'] }],
      reconcile: async () => undefined,
    };
    const { source, watcher } = harness([primaryFn], { enqueue: async (f, key, _reason, rv) => void calls.push(`${f}:${key}@${rv ?? '-'}`) });
    await source('configmaps').add(cm('a'));
    expect(calls).toEqual(['p:ns/a@1']);
    expect(watcher.batched).toBe(1);
  });

  it('stop() enqueues what the windows hold', async () => {
    const calls: string[] = [];
    const { source, watcher } = harness([fn('batched', { batchMs: 60_000 })], { enqueue: async (f, key) => void calls.push(`${f}:${key}`) });
    await source('configmaps').add(cm('a'));
    expect(calls).toEqual([]);
    await watcher.stop();
    expect(calls).toEqual(['batched:ns/a']);
  });
});
