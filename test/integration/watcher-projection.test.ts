import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../kube/object.js';
import { kubeRequest } from '../../kube/raw.js';
import { collectionPath, Resources } from '../../kube/resources.js';
import { openWatch } from '../../kube/watch-stream.js';
import { createLogger } from '../../base/log.js';
import type { WatchEvent } from '../../watcher/events.js';
import { ListWatch, METADATA_LIST_ACCEPT, METADATA_WATCH_ACCEPT } from '../../watcher/list-watch.js';
import { keepFields, ONLY_METADATA } from '../../watcher/projection.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Issue 12 item 3: what the watcher keeps of an object, against the real API server.
const log = createLogger('watcher-projection-test', 'warn');
let sb: TestSandbox;
beforeAll(async () => {
  sb = await openSandbox('wproj');
});
afterAll(async () => {
  await sb.cleanup();
});

const summary = (e: WatchEvent) => `${e.type}:${e.object.metadata.name}`;
const configMap = (name: string, labels: Record<string, string> = {}) => ({ metadata: { name, labels }, data: { big: 'x'.repeat(2000) } });

describe('watcher projections', () => {
  it('the API server answers the metadata-only list and watch with PartialObjectMetadata (no data, managedFields present until stripped)', async () => {
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: configMap('probe') });
    const list = (await kubeRequest(sb.kc, collectionPath(Resources.configMap, sb.namespace), { accept: METADATA_LIST_ACCEPT })) as { kind?: string; items: Array<Record<string, unknown>> };
    expect(list.kind).toBe('PartialObjectMetadataList');
    const probe = list.items.find((i) => (i.metadata as KubeObject['metadata']).name === 'probe');
    expect(probe?.data).toBeUndefined();
    expect((probe?.metadata as Record<string, unknown>).managedFields).toBeDefined();

    // The watch, requested as list-watch.ts requests it (a refusal would reject `done`); its first event is enough.
    const events: Array<{ type: string; object: Record<string, unknown> }> = [];
    const unreadable: string[] = [];
    const stream = openWatch(sb.kc, {
      path: collectionPath(Resources.configMap, sb.namespace),
      query: { resourceVersion: '0', timeoutSeconds: 30 },
      accept: METADATA_WATCH_ACCEPT,
      headerTimeoutMs: 10_000,
      onLine: (type, object) => {
        events.push({ type, object: object as Record<string, unknown> });
        stream.abort();
      },
      onUnreadable: (reason) => void unreadable.push(reason),
    });
    await stream.done;
    expect(unreadable).toEqual([]);
    const first = events[0];
    if (!first) throw new Error('the watch ended without an event');
    expect(first.type).toBe('ADDED');
    expect(first.object.kind).toBe('PartialObjectMetadata');
    expect(first.object.data).toBeUndefined();
  });

  it('a metadata-only ListWatch pages its first list, stores metadata without managedFields under the real kind, and sees label changes and deletes', async () => {
    const selector = 'ripple.dev/proj=yes';
    for (let i = 0; i < 5; i++) await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: configMap(`cm-${i}`, { 'ripple.dev/proj': 'yes' }) });
    const seen: WatchEvent[] = [];
    const lw = new ListWatch({
      kc: sb.kc,
      resource: Resources.configMap,
      namespace: sb.namespace,
      labelSelector: selector,
      pageSize: 2,
      projection: ONLY_METADATA,
      log,
      onEvent: async (e) => void seen.push(e),
    });
    try {
      await lw.waitForSync(30_000);
      expect(seen.map(summary).sort()).toEqual(['create:cm-0', 'create:cm-1', 'create:cm-2', 'create:cm-3', 'create:cm-4']);
      const stored = lw.store.get(`${sb.namespace}/cm-0`) as Record<string, unknown> & KubeObject;
      expect(stored.kind).toBe('ConfigMap');
      expect(stored.apiVersion).toBe('v1');
      expect(stored.data).toBeUndefined();
      expect('managedFields' in stored.metadata).toBe(false);
      expect(stored.metadata.labels).toEqual({ 'ripple.dev/proj': 'yes' });
      expect(lw.store.list(sb.namespace)).toHaveLength(5);

      seen.length = 0;
      await kubeRequest(sb.kc, `${collectionPath(Resources.configMap, sb.namespace)}/cm-1`, {
        method: 'PATCH',
        contentType: 'application/merge-patch+json',
        body: { metadata: { labels: { extra: 'a' } } },
      });
      await sb.core.deleteNamespacedConfigMap({ name: 'cm-2', namespace: sb.namespace });
      await waitFor('the label change and the delete', 20_000, async () => seen.length >= 2);
      const update = seen.find((e) => e.type === 'update');
      expect(update?.type === 'update' && update.old.metadata.labels?.extra === undefined && update.object.metadata.labels?.extra === 'a').toBe(true);
      expect(update?.object.kind).toBe('ConfigMap');
      expect((update?.object as Record<string, unknown>).data).toBeUndefined();
      expect(seen.map(summary).sort()).toEqual(['delete:cm-2', 'update:cm-1']);
    } finally {
      await lw.stop();
    }
  });

  it('a metadata-only watch of an empty selection syncs (the API server lists it as items: null)', async () => {
    const lw = new ListWatch({
      kc: sb.kc,
      resource: Resources.configMap,
      namespace: sb.namespace,
      labelSelector: 'ripple.dev/none=here',
      projection: ONLY_METADATA,
      log,
      onEvent: async () => undefined,
    });
    try {
      await lw.waitForSync(30_000);
      expect(lw.store.size).toBe(0);
    } finally {
      await lw.stop();
    }
  });

  it('a projection keeping named fields stores those and drops the rest (and managedFields)', async () => {
    await sb.core.createNamespacedService({ namespace: sb.namespace, body: { metadata: { name: 'svc' }, spec: { selector: { app: 'x' }, ports: [{ port: 80 }] } } });
    const lw = new ListWatch({
      kc: sb.kc,
      resource: Resources.service,
      namespace: sb.namespace,
      projection: keepFields('spec.selector'),
      log,
      onEvent: async () => undefined,
    });
    try {
      await lw.waitForSync(30_000);
      const svc = lw.store.get(`${sb.namespace}/svc`) as Record<string, unknown> & KubeObject;
      expect(svc.spec).toEqual({ selector: { app: 'x' } });
      expect(svc.status).toBeUndefined();
      expect(svc.kind).toBe('Service');
      expect('managedFields' in svc.metadata).toBe(false);
    } finally {
      await lw.stop();
    }
  });
});
