import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { perIdKey } from '../../functions/ops-lifecycle/protocol/index.js';
import { goClient, type GoAdapter } from '../fixtures/ops-lifecycle-go-client.js';
import { createControlledPod, recordPod, waitPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startTestWebhook, type TestWebhook } from '../fixtures/ops-lifecycle-webhook.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const UPDATE: GoAdapter = { id: 'collaset', type: 'update' };

// kuperator grants operate inside the status write that shows the Pod drained. With OPS_LIFECYCLE_TRAFFIC_OFF=ready
// Ripple's rule is "service-ready False, no protection finalizer, Ready not True", all of which a pods/status
// write shows: the sandbox's kubelet (KWOK stages recomputing Ready from the readiness gates) turning Ready False
// is that write, and the webhook makes operate part of it. Without the webhook the reconciler adds operate in a
// later write, after it has seen Ready False.
describe('ops-lifecycle webhook: pods/status, OPS_LIFECYCLE_TRAFFIC_OFF=ready', () => {
  let sb: TestSandbox;
  let hook: TestWebhook;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-status');
    hook = await startTestWebhook(sb, { trafficOff: 'ready' });
    ripple = await startRipple(sb, [definition({ OPS_LIFECYCLE_TRAFFIC_OFF: 'ready' })], { env: { OPS_LIFECYCLE_TRAFFIC_OFF: 'ready' } });
  });
  afterAll(async () => {
    await ripple?.stop();
    await hook?.stop();
    await sb?.cleanup();
  });

  it("the kubelet's status write that turns Ready False carries operate", async () => {
    const go = goClient(sb);
    const ref = await createControlledPod(sb, 'drained');
    await waitServing(sb, ref);
    const rec = await recordPod(sb, 'drained');
    try {
      const begunAt = Number((await go.begin('drained', UPDATE))?.metadata?.resourceVersion);
      await waitPod(sb, ref, 'operate granted', (p) => perIdKey('operate', UPDATE.id) in (p.metadata.labels ?? {}), 60_000);
      // The watch delivers the version waitPod read a moment later.
      await waitFor('the watch to deliver the version with operate', 10_000, async () => rec.snapshots.some((s) => Number(s.resourceVersion) > begunAt && perIdKey('operate', UPDATE.id) in s.labels) || undefined, 50);
      const after = rec.snapshots.filter((s) => Number(s.resourceVersion) > begunAt);
      const notReady = after.find((s) => s.ready === 'False');
      expect(notReady, `a version with Ready False after Begin, among ${after.length}`).toBeDefined();
      expect(notReady?.serviceReady, 'Ready followed the gate').toBe('False');
      expect(notReady?.labels, `labels at rv ${notReady?.resourceVersion}`).toHaveProperty(perIdKey('operate', UPDATE.id));
      // And never before: every earlier version still served or waited in preparing.
      for (const s of after.filter((x) => Number(x.resourceVersion) < Number(notReady?.resourceVersion))) expect(s.labels).not.toHaveProperty(perIdKey('operate', UPDATE.id));
    } finally {
      rec.stop();
    }
  });
});
