import { queuePrefix } from '../../../queue/keys.js';

/**
 * Where a fault case's effects live, named the same way by the fault worker and the case: under the queue's
 * prefix (its hash tag), so a fenced script may touch them with the queue's own keys.
 * - `state`: the handler state, one field per key (as the autoscaler's decisions hash);
 * - `order`: a list that holds, in the order Redis ran them, each reconcile's start and each state write
 *   (appended in the same MULTI or script as the write, so it is there exactly when the write is).
 */
export function effectKeys(prefix: string, queueName: string): { state: string; order: string } {
  const base = `${queuePrefix(prefix, queueName)}:faults`;
  return { state: `${base}:state`, order: `${base}:order` };
}

/** The ConfigMap a key's API effects write: a DNS-1123 name from the key (`ns/obj-3` → `fault-ns-obj-3`). */
export function configMapName(key: string): string {
  return `fault-${key.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`;
}

/** One entry of the order list: a reconcile's start (`read`) or a state write (`effect`) of `key` under `token`. */
export function orderEntry(kind: 'read' | 'effect', key: string, token: string): string {
  return JSON.stringify({ kind, key, token });
}
