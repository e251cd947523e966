import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, kubeRequest } from '../../kube/raw.js';
import type { WriteIntent } from './correlation-store.js';

type EventWrite = Extract<WriteIntent, { op: 'create' | 'patch' }>;

/** What reached the API server. `rejected`: it refused the Event for good (client-go drops those too). */
export type WriteOutcome = 'created' | 'patched' | 'rejected';

const STRATEGIC_MERGE = 'application/strategic-merge-patch+json';

/** A 5xx, a 429 or no answer at all may pass; any other refusal will be repeated word for word. */
function isTransient(err: unknown): boolean {
  if (!(err instanceof KubeApiError)) return true;
  return err.code >= 500 || err.code === 429;
}

/**
 * Writes one correlated Event the way client-go's recorder does: a first occurrence is created
 * under its deterministic name, a repeat is a strategic-merge PATCH of count, lastTimestamp and
 * message. A create that meets 409 AlreadyExists (another attempt, or a replica, got there first)
 * becomes a patch; a patch that meets 404 (the Event expired, or its create was spam-filtered)
 * becomes a create of the whole Event, which carries the same count.
 * Transient failures throw, so the reconcile is retried and the request stays queued; permanent
 * ones (namespace gone or terminating, invalid Event) return `rejected` so one bad Event never
 * blocks the ones behind it.
 */
export async function writeEvent(kc: KubeConfig, write: EventWrite): Promise<{ outcome: WriteOutcome; detail?: string }> {
  const { event } = write;
  const collection = `/api/v1/namespaces/${encodeURIComponent(event.metadata.namespace)}/events`;
  const item = `${collection}/${encodeURIComponent(event.metadata.name)}`;
  const patch = { count: event.count, lastTimestamp: event.lastTimestamp, message: event.message };
  let op = write.op;
  // create → 409 → patch → 404 → create: at most one round trip each way, then give up as rejected.
  for (let step = 0; step < 3; step++) {
    try {
      if (op === 'create') {
        await kubeRequest(kc, collection, { method: 'POST', body: event });
        return { outcome: 'created' };
      }
      await kubeRequest(kc, item, { method: 'PATCH', body: patch, contentType: STRATEGIC_MERGE });
      return { outcome: 'patched' };
    } catch (err) {
      if (isTransient(err)) throw err;
      const code = err instanceof KubeApiError ? err.code : 0;
      if (op === 'create' && code === 409) op = 'patch';
      else if (op === 'patch' && code === 404) op = 'create';
      else return { outcome: 'rejected', detail: err instanceof Error ? err.message : String(err) };
    }
  }
  return { outcome: 'rejected', detail: `${event.metadata.name} kept appearing and vanishing` };
}
