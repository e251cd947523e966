import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeObject } from '../kube/object.js';
import { resourceId, type ResourceRef } from '../kube/resources.js';
import type { FunctionDefinition, MapContext, Trigger } from '../runtime/function.js';
import type { Logger } from '../runtime/log.js';
import type { WatchEvent } from './events.js';
import { ListWatch, type WatchHealth } from './list-watch.js';
import { passes } from './predicates.js';

export interface WatcherOptions {
  kc: KubeConfig;
  functions: FunctionDefinition[];
  /** Hands a key to a function's queue. */
  enqueue: (fn: string, key: string, reason: string) => Promise<void>;
  /** Only the leader enqueues; followers keep their stores warm to take over at once. */
  isLeader: () => boolean;
  log: Logger;
  /** Watch only this namespace (triggers that name their own namespace keep it); default all. */
  namespace?: string;
}

interface WatchGroup {
  lw: ListWatch;
  resource: ResourceRef;
  namespace?: string;
  triggers: Array<{ fn: string; trigger: Trigger }>;
}

/**
 * Composes the triggers every function declares into one list+watch per (resource, namespace,
 * selector), runs each event through each trigger's predicate and mapper, and enqueues the keys.
 */
export class Watcher {
  private readonly groups = new Map<string, WatchGroup>();
  private readonly mapContext: MapContext;

  constructor(private readonly opts: WatcherOptions) {
    this.mapContext = { list: (resource, namespace) => this.list(resource, namespace) };
  }

  start(): void {
    for (const fn of this.opts.functions) {
      for (const declared of fn.triggers) {
        const namespace = declared.namespace ?? (declared.resource.namespaced ? this.opts.namespace : undefined);
        const trigger = { ...declared, namespace };
        const id = `${resourceId(trigger.resource)}|${trigger.namespace ?? '*'}|${trigger.labelSelector ?? ''}`;
        let group = this.groups.get(id);
        if (!group) {
          const triggers: WatchGroup['triggers'] = [];
          const lw = new ListWatch({
            kc: this.opts.kc,
            resource: trigger.resource,
            namespace: trigger.namespace,
            labelSelector: trigger.labelSelector,
            optional: trigger.optional,
            log: this.opts.log,
            onEvent: (event) => this.dispatch(triggers, event),
          });
          group = { lw, resource: trigger.resource, namespace: trigger.namespace, triggers };
          this.groups.set(id, group);
        }
        group.triggers.push({ fn: fn.name, trigger });
      }
    }
    this.opts.log.info({ watches: [...this.groups.keys()] }, 'watching');
  }

  async waitForSync(timeoutMs?: number): Promise<void> {
    await Promise.all([...this.groups.values()].map((g) => g.lw.waitForSync(timeoutMs)));
  }

  /**
   * On becoming leader: replay every object in every store as a generic event, so whatever happened
   * while no leader was enqueueing is reconciled (level-triggered takeover).
   */
  async replayAll(): Promise<number> {
    let n = 0;
    for (const group of this.groups.values()) {
      for (const object of group.lw.store.list()) {
        await this.dispatch(group.triggers, { type: 'generic', object });
        n++;
      }
    }
    return n;
  }

  health(): WatchHealth[] {
    return [...this.groups.values()].map((g) => g.lw.health());
  }

  /** Ready when every watch has synced and none has been down for longer than `boundMs`. */
  ready(boundMs: number, now = Date.now()): boolean {
    return this.health().every((h) => h.synced && (h.downSince === undefined || now - h.downSince < boundMs));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.groups.values()].map((g) => g.lw.stop()));
  }

  private list(resource: ResourceRef, namespace?: string): KubeObject[] {
    for (const g of this.groups.values()) {
      if (resourceId(g.resource) !== resourceId(resource)) continue;
      if (g.namespace !== undefined && g.namespace !== namespace) continue;
      return g.lw.store.list(namespace);
    }
    return [];
  }

  private async dispatch(triggers: WatchGroup['triggers'], event: WatchEvent): Promise<void> {
    if (!this.opts.isLeader()) return;
    for (const { fn, trigger } of triggers) {
      if (!passes(trigger.predicate, event)) continue;
      for (const key of trigger.map(event, this.mapContext)) {
        await this.opts.enqueue(fn, key, `${trigger.resource.kind}:${event.type}`);
      }
    }
  }
}
