// The bench's own view of the cluster: a watch that is started again when the server or the network
// ends it (a fresh watch replays every object as ADDED, which the callers tolerate), and small
// helpers to wait for a namespace.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from '../../kube/raw.js';
import { nowMs } from '../stats.js';

export type Obj = Record<string, unknown> & { metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; generation?: number } };

export interface Observer {
  stop(): void;
}

/** Calls `onEvent(type, object, ms)` for every event of the watch; `ms` is when this process saw it. */
export async function observe(kc: KubeConfig, watchPath: string, onEvent: (type: string, obj: Obj, ms: number) => void): Promise<Observer> {
  let stopped = false;
  let current: AbortController | undefined;
  const start = async (): Promise<void> => {
    if (stopped) return;
    current = await new Watch(kc).watch(
      watchPath,
      {},
      (type: string, obj: Obj) => onEvent(type, obj, nowMs()),
      () => {
        if (!stopped) setTimeout(() => void start().catch(() => setTimeout(() => void start(), 1_000)), 200);
      },
    );
  };
  await start();
  return {
    stop: () => {
      stopped = true;
      current?.abort();
    },
  };
}

export async function until(what: string, timeoutMs: number, check: () => boolean | Promise<boolean>, everyMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Creates a namespace and waits for its default ServiceAccount (Pods need it). */
export async function createNamespace(kc: KubeConfig, name: string): Promise<void> {
  await kubeRequest(kc, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name } } });
  await until(`the default ServiceAccount in ${name}`, 120_000, () =>
    kubeRequest(kc, `/api/v1/namespaces/${name}/serviceaccounts/default`).then(
      () => true,
      () => false,
    ),
  );
}

/** Deletes a namespace and waits until it is gone (so its deletion does not load the next run). */
export async function deleteNamespace(kc: KubeConfig, name: string, timeoutMs = 600_000): Promise<void> {
  await kubeRequest(kc, `/api/v1/namespaces/${name}`, { method: 'DELETE' }).catch(() => undefined);
  await until(`namespace ${name} to be gone`, timeoutMs, () =>
    kubeRequest(kc, `/api/v1/namespaces/${name}`).then(
      () => false,
      () => true,
    ),
  1_000);
}

/** Runs `fn` over items with at most `limit` in flight. */
export async function bounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}
