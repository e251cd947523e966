/**
 * A process-wide registry of worker-local caches, one per KubeConfig and namespace, started on first use
 * (functions/reconcile-modelserving/children-cache.ts, functions/ops-lifecycle/pod-access/pod-cache.ts).
 * Like a connection pool it holds nothing a reconcile depends on: a cache stops itself when idle and
 * leaves the registry through the `onStop` it was given.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { outsideReconcileScope } from '../base/reconcile-scope.js';

export interface StoppableCache {
  stop(): Promise<void>;
}

export class NamespacedCaches<C extends StoppableCache> {
  private readonly byConfig = new WeakMap<KubeConfig, Map<string, C>>();
  private readonly live = new Set<C>();

  /**
   * The cache of `namespace` for `kc`, made by `create` if none runs. It is created outside the calling
   * reconcile's scope (base/reconcile-scope.ts): its watch, relists and enqueues outlive that reconcile
   * and must not fail with LeaseLostError once the reconcile loses its lease.
   */
  get(kc: KubeConfig, namespace: string, create: (onStop: () => void) => C): C {
    let byNamespace = this.byConfig.get(kc);
    if (!byNamespace) this.byConfig.set(kc, (byNamespace = new Map()));
    const running = byNamespace.get(namespace);
    if (running) return running;
    const registry = byNamespace;
    const created: C = outsideReconcileScope(() =>
      create(() => {
        registry.delete(namespace);
        this.live.delete(created);
      }),
    );
    registry.set(namespace, created);
    this.live.add(created);
    return created;
  }

  /** The running cache of `namespace` for `kc`, without starting one. */
  peek(kc: KubeConfig, namespace: string): C | undefined {
    return this.byConfig.get(kc)?.get(namespace);
  }

  /** Every running cache of this process (for the counters benchmarks report). */
  running(): C[] {
    return [...this.live];
  }

  /** Stops every cache now, for a process that ends on its own rather than by exiting (a benchmark, a test). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.live].map((c) => c.stop()));
  }
}
