import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyActions } from '../../functions/reconcile-modelserving/apply.js';
import { z } from 'zod';
import { kubeRequest } from '../../kube/raw.js';
import { createLogger } from '../../base/log.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// Issue 28, item 3: a reconcile that lost its claim had planned a scale-down; its DELETE of pod X lands after
// the key's next holder, seeing the spec reverted, decided to keep X. Before, the delete carried only the UID
// precondition and a serving pod died for nothing. Now every delete carries the resourceVersion it was
// planned from, and the API server refuses it (409) once the pod changed. Real API server, the real apply step.
const log = createLogger('modelserving-stale-delete-test', process.env.LOG_LEVEL ?? 'warn');
let sb: TestSandbox;

beforeAll(async () => {
  sb = await openSandbox('stale-delete');
});
afterAll(async () => {
  await sb.cleanup();
});

/**
 * A pod bound to a node that does not exist: no scheduler, kubelet or KWOK writes to it, so its resourceVersion
 * moves only when the test changes it, and a delete leaves it terminating (no kubelet finishes it) for the test
 * to see.
 */
async function createPod(name: string) {
  const pod = await sb.core.createNamespacedPod({
    namespace: sb.namespace,
    body: { metadata: { name, labels: { app: 'stale-delete' } }, spec: { nodeName: 'no-such-node', containers: [{ name: 'c', image: 'example.invalid/model:1' }] } },
  });
  return { name, uid: pod.metadata?.uid ?? '', resourceVersion: pod.metadata?.resourceVersion ?? '' };
}

async function terminating(name: string): Promise<boolean> {
  const pod = await sb.core.readNamespacedPod({ name, namespace: sb.namespace });
  return pod.metadata?.deletionTimestamp !== undefined;
}

const applyOpts = () => ({ kc: sb.kc, namespace: sb.namespace, log, now: () => new Date(), concurrency: 4, lifecycle: false });

describe('a delete planned by a stale holder', () => {
  it('is refused once the pod changed after it was planned, and the pod keeps serving', async () => {
    const planned = await createPod('x');
    // The next holder reads X and keeps it: here it changes X (an annotation, as a rollout or an operator would).
    const kept = await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/pods/x`, {
      method: 'PATCH',
      body: { metadata: { annotations: { kept: 'by-new-holder' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(z.object({ metadata: z.object({ resourceVersion: z.string() }) }).parse(kept).metadata.resourceVersion).not.toBe(planned.resourceVersion);
    // The stale holder's delete arrives now.
    await applyActions([{ kind: 'deletePod', ...planned, reason: 'scale-down planned by a stale holder' }], applyOpts());
    expect(await terminating('x')).toBe(false);
  });

  it('still deletes a pod that is as it was planned', async () => {
    const planned = await createPod('y');
    await applyActions([{ kind: 'deletePod', ...planned, reason: 'scale-down' }], applyOpts());
    expect(await terminating('y')).toBe(true);
  });
});
