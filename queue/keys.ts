/** Where one function's queue keeps its state in Redis. BullMQ's own keys share the same prefix. */
export interface QueueKeys {
  pending: string;
  /** When each pending id was recorded (ms, Redis clock): a job not created yet still counts for a grace period. */
  pendingSince: string;
  due: string;
  active: string;
  dirty: string;
  failures: string;
  seq: string;
  /** BullMQ stores job `id` at `${jobKeyPrefix}${id}`. */
  jobKeyPrefix: string;
}

export function queueKeys(prefix: string, queueName: string): QueueKeys {
  const base = `${prefix}:${queueName}`;
  return {
    pending: `${base}:ripple:pending`,
    pendingSince: `${base}:ripple:pending-since`,
    due: `${base}:ripple:due`,
    active: `${base}:ripple:active`,
    dirty: `${base}:ripple:dirty`,
    failures: `${base}:ripple:failures`,
    seq: `${base}:ripple:seq`,
    jobKeyPrefix: `${base}:`,
  };
}

/** A reconcile key: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function parseObjectKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
