/**
 * Where one function's queue keeps its state in Redis. BullMQ's own keys share the same prefix,
 * `${prefix}:{${queueName}}` (queuePrefix): the braces are a Redis Cluster hash tag, so every key of one
 * function's queue — BullMQ's job hashes and lists and Ripple's structures below — hashes to one slot and
 * each script (queue/scripts.ts) runs on one node. On a single Redis the braces are just characters.
 */
export interface QueueKeys {
  pending: string;
  /** When each pending id was recorded (ms, Redis clock): a job not created yet still counts for a grace period. */
  pendingSince: string;
  due: string;
  active: string;
  dirty: string;
  failures: string;
  seq: string;
  /** When each claim's lease ends (ms, Redis clock). */
  leases: string;
  /** What each key's last RELEASE answered, by token, so a RELEASE resent after a lost reply gets the same answer. */
  released: string;
  /**
   * The newest resourceVersion of the key's own object among the watch events that enqueued it since its last
   * claim (queue/resource-version-order.ts orders them); a claim takes it and hands it to the handler.
   */
  versions: string;
  /** BullMQ stores job `id` at `${jobKeyPrefix}${id}`. */
  jobKeyPrefix: string;
}

/** The prefix BullMQ gets for one function's queue: Ripple's prefix and the queue's hash tag. */
export function queuePrefix(prefix: string, queueName: string): string {
  return `${prefix}:{${queueName}}`;
}

export function queueKeys(prefix: string, queueName: string): QueueKeys {
  // The same base BullMQ uses for its keys (`${bullPrefix}:${queueName}:…`), so jobKeyPrefix is a job's hash.
  const base = `${queuePrefix(prefix, queueName)}:${queueName}`;
  return {
    pending: `${base}:ripple:pending`,
    pendingSince: `${base}:ripple:pending-since`,
    due: `${base}:ripple:due`,
    active: `${base}:ripple:active`,
    dirty: `${base}:ripple:dirty`,
    failures: `${base}:ripple:failures`,
    seq: `${base}:ripple:seq`,
    leases: `${base}:ripple:leases`,
    released: `${base}:ripple:released`,
    versions: `${base}:ripple:versions`,
    jobKeyPrefix: `${base}:`,
  };
}

/** The KEYS every queue script takes, in the order they index them (KEYS[1] … KEYS[10] in queue/scripts.ts). */
export function scriptKeys(k: QueueKeys): string[] {
  return [k.pending, k.due, k.active, k.dirty, k.failures, k.seq, k.pendingSince, k.leases, k.released, k.versions];
}

/** How many keys scriptKeys() gives: the scripts find BullMQ's keys after them. */
export const SCRIPT_KEY_COUNT = 10;

/** A reconcile key: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function parseObjectKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
