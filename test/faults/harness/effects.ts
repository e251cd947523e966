import type { KubeConfig } from '@kubernetes/client-node';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { kubeObjectSchema, listSchema } from '../../../kube/object.js';
import { kubeRequest } from '../../../kube/raw.js';
import { openWatch, type WatchStream } from '../../../kube/watch-stream.js';
import { waitFor } from '../../harness/sandbox.js';
import type { ReconcileRecord, Stamp } from '../checker.js';
import { configMapName } from './effect-keys.js';

const KEY_ANNOTATION = 'ripple.dev/fault-key';

const configMapSchema = kubeObjectSchema.and(z.object({ data: z.record(z.string(), z.string()).optional() }));

/**
 * The API side of a case's effects: one ConfigMap per key, and a watch from the resourceVersion they were
 * created at that records every write to them, whoever made it and whatever its client learnt of it (a
 * write whose client aborted in flight still shows here if the server applied it).
 */
export class ApiEffects {
  private readonly writes: Stamp[] = [];
  private readonly seen = new Map<string, string>();
  private watch?: WatchStream;
  private failure: string | undefined;
  private ended = false;

  private constructor(
    private readonly kc: KubeConfig,
    readonly namespace: string,
    private readonly label: string,
  ) {}

  static async start(kc: KubeConfig, namespace: string, label: string, keys: readonly string[]): Promise<ApiEffects> {
    const e = new ApiEffects(kc, namespace, label);
    for (const key of keys) {
      await kubeRequest(kc, `/api/v1/namespaces/${namespace}/configmaps`, {
        method: 'POST',
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configMapName(key), labels: { 'ripple.dev/fault': label }, annotations: { [KEY_ANNOTATION]: key } }, data: {} },
      });
    }
    const list = listSchema.parse(await kubeRequest(kc, `/api/v1/namespaces/${namespace}/configmaps`, { query: { labelSelector: `ripple.dev/fault=${label}` } }));
    for (const cm of list.items) e.seen.set(cm.metadata.name, cm.metadata.resourceVersion ?? '');
    e.watch = openWatch(kc, {
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      query: { resourceVersion: list.metadata.resourceVersion, labelSelector: `ripple.dev/fault=${label}`, timeoutSeconds: 900 },
      headerTimeoutMs: 15_000,
      onLine: (type, object) => e.onEvent(type, object),
      onUnreadable: (reason) => (e.failure ??= `unreadable watch line: ${reason}`),
    });
    e.watch.done.then(
      () => (e.ended = true),
      (err: unknown) => {
        e.ended = true;
        e.failure ??= `the watch failed: ${String(err)}`;
      },
    );
    return e;
  }

  private onEvent(type: string, object: unknown): void {
    if (type === 'ERROR') {
      this.failure ??= `the watch sent an error: ${JSON.stringify(object)}`;
      return;
    }
    const cm = configMapSchema.safeParse(object);
    if (!cm.success) {
      this.failure ??= `a watch event that is not a ConfigMap: ${cm.error.message}`;
      return;
    }
    const { name, resourceVersion, annotations } = cm.data.metadata;
    if (resourceVersion === undefined) return;
    this.seen.set(name, resourceVersion);
    const key = annotations?.[KEY_ANNOTATION];
    const token = cm.data.data?.token;
    if (type === 'MODIFIED' && key !== undefined && token !== undefined) this.writes.push({ kind: 'api', key, token, order: resourceVersion });
  }

  /** Every write the server applied, once the watch has seen each ConfigMap at its current version. */
  async landed(timeoutMs = 30_000): Promise<Stamp[]> {
    const list = listSchema.parse(await kubeRequest(this.kc, `/api/v1/namespaces/${this.namespace}/configmaps`, { query: { labelSelector: `ripple.dev/fault=${this.label}` } }));
    await waitFor('the ConfigMap watch to catch up with a list', timeoutMs, async () => {
      if (this.failure !== undefined) throw new Error(this.failure);
      if (this.ended) throw new Error('the ConfigMap watch ended early: the history of writes would be incomplete');
      return list.items.every((cm) => this.seen.get(cm.metadata.name) === cm.metadata.resourceVersion);
    }, 20);
    return [...this.writes];
  }

  stop(): Promise<void> {
    this.watch?.abort();
    return Promise.resolve();
  }
}

/** The API reads: the resourceVersion each reconcile read its ConfigMap at. */
export function apiReads(records: readonly ReconcileRecord[]): Stamp[] {
  return records.flatMap((r) => (r.readRv !== undefined ? [{ kind: 'api' as const, key: r.key, token: r.token, order: r.readRv }] : []));
}

const orderEntrySchema = z.object({ kind: z.enum(['read', 'effect']), key: z.string(), token: z.string() });

/**
 * The state side, from the order list: each reconcile's start and each state write that landed, stamped with
 * their place in the list, which is the order Redis ran them in.
 */
export async function stateStamps(redis: Redis, orderKey: string): Promise<{ reads: Stamp[]; landed: Stamp[] }> {
  const reads: Stamp[] = [];
  const landed: Stamp[] = [];
  for (const [i, text] of (await redis.lrange(orderKey, 0, -1)).entries()) {
    const e = orderEntrySchema.parse(JSON.parse(text));
    (e.kind === 'effect' ? landed : reads).push({ kind: 'state', key: e.key, token: e.token, order: String(i) });
  }
  return { reads, landed };
}
