/**
 * A namespace being deleted refuses every create with 403 "unable to create new content in namespace
 * <ns> because it is being terminated", while the namespace controller deletes the pods of a
 * ModelServing that still exists. Retrying cannot help (the ModelServing goes next), so the first
 * such refusal is remembered per ModelServing (by UID: a namesake in a re-created namespace is another
 * object) and later reconciles of it stop before planning, without error or backoff, until it is gone.
 */
import type { RedisClient } from '../../queue/connection.js';
import { KubeApiError } from '../../kube/raw.js';

/** How long the memory lasts: longer than any namespace teardown needs, bounded so keys never pile up. */
export const NAMESPACE_TERMINATING_TTL_SECONDS = 600;

/** The API server's refusal of a create in a namespace being deleted (its NamespaceTerminating cause). */
export function isNamespaceTerminating(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 403 && /because it is being terminated/.test(err.message);
}

export function namespaceTerminatingKey(prefix: string, namespace: string, name: string): string {
  return `${prefix}:modelserving:ns-terminating:${namespace}/${name}`;
}

export interface TerminatingMemory {
  /** The UID of the ModelServing whose creates were refused, if any. */
  read(): Promise<string | null>;
  remember(uid: string): Promise<void>;
  forget(): Promise<void>;
}

export function terminatingMemory(redis: RedisClient, prefix: string, namespace: string, name: string): TerminatingMemory {
  const key = namespaceTerminatingKey(prefix, namespace, name);
  return {
    read: () => redis.get(key),
    remember: async (uid) => void (await redis.set(key, uid, 'EX', NAMESPACE_TERMINATING_TTL_SECONDS)),
    forget: async () => void (await redis.del(key)),
  };
}
