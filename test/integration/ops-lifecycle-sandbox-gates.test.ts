import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeRequest } from '../../kube/raw.js';
import { SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/protocol/index.js';
import { conditionOf, mustReadPod, waitPod } from '../fixtures/ops-lifecycle-pods.js';
import { readServiceSlices, routedPods, waitRouted } from '../fixtures/ops-lifecycle-traffic.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// The sandbox itself, with no Ripple function running: KWOK's stages (infra/local-control-plane/build/kwok/
// stages) must make a Pod's Ready follow its readiness gates the way a kubelet does, and the real
// EndpointSlice controller (kube-controller-manager) must then drop and re-add the Pod.
describe('sandbox: Ready follows readiness gates (KWOK stages)', () => {
  let sb: TestSandbox;

  beforeAll(async () => {
    sb = await openSandbox('opslc-gates');
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
    });
  });
  afterAll(async () => {
    await sb?.cleanup();
  });

  async function createPod(name: string, gates: string[]): Promise<void> {
    const body: V1Pod = {
      metadata: { name, labels: { app: 'web' } },
      spec: {
        containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }],
        ...(gates.length > 0 ? { readinessGates: gates.map((conditionType) => ({ conditionType })) } : {}),
      },
    };
    await sb.core.createNamespacedPod({ namespace: sb.namespace, body });
  }

  async function setCondition(name: string, type: string, status: 'True' | 'False'): Promise<void> {
    // Strategic merge: conditions merge by type, so the stage's own conditions stay.
    await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/pods/${name}/status`, {
      method: 'PATCH',
      body: { status: { conditions: [{ type, status }] } },
      contentType: 'application/strategic-merge-patch+json',
    });
  }

  it('a Pod without readiness gates is Running and Ready at once, as before', async () => {
    await createPod('plain', []);
    const pod = await waitPod(sb, { namespace: sb.namespace, name: 'plain' }, 'Running and Ready', (p) => conditionOf(p, 'Ready') === 'True');
    expect(pod.status?.phase).toBe('Running');
    expect(conditionOf(pod, 'ContainersReady')).toBe('True');
    await waitRouted(sb, 'web', ['plain']);
  });

  it("a gated Pod's Ready is ContainersReady and every gate True, recomputed on each gate write; endpoints follow", async () => {
    const gateB = 'example.com/second-gate';
    await createPod('gated', [SERVICE_READY_CONDITION, gateB]);
    const ref = { namespace: sb.namespace, name: 'gated' };

    // Started, but no gate condition written yet: not Ready, and KWOK did not invent the gate conditions.
    const started = await waitPod(sb, ref, 'Running with Ready False', (p) => p.status?.phase === 'Running' && conditionOf(p, 'Ready') === 'False');
    expect(conditionOf(started, 'ContainersReady')).toBe('True');
    expect(conditionOf(started, SERVICE_READY_CONDITION)).toBeUndefined();
    expect(started.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('ReadinessGatesNotReady');
    expect(started.status?.podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    await waitRouted(sb, 'web', ['plain']);
    const slices = await readServiceSlices(sb, 'web');
    // The EndpointSlice controller lists it, not ready.
    expect(slices.flatMap((s) => s.endpoints ?? []).find((e) => e.targetRef?.name === 'gated')?.conditions?.ready).toBe(false);

    // One gate of two: still not Ready.
    await setCondition('gated', SERVICE_READY_CONDITION, 'True');
    await waitPod(sb, ref, 'service-ready True', (p) => conditionOf(p, SERVICE_READY_CONDITION) === 'True');
    expect(conditionOf(await mustReadPod(sb, ref), 'Ready')).toBe('False');

    // Both gates: Ready, and routed.
    await setCondition('gated', gateB, 'True');
    await waitPod(sb, ref, 'Ready True once both gates are True', (p) => conditionOf(p, 'Ready') === 'True');
    await waitRouted(sb, 'web', ['gated', 'plain']);

    // A gate turns False: Ready goes False and the Pod leaves the endpoints; back True, back in.
    await setCondition('gated', SERVICE_READY_CONDITION, 'False');
    const off = await waitPod(sb, ref, 'Ready False after the gate went False', (p) => conditionOf(p, 'Ready') === 'False');
    expect(off.status?.phase).toBe('Running');
    await waitRouted(sb, 'web', ['plain']);
    await setCondition('gated', SERVICE_READY_CONDITION, 'True');
    await waitPod(sb, ref, 'Ready True again', (p) => conditionOf(p, 'Ready') === 'True');
    await waitRouted(sb, 'web', ['gated', 'plain']);
    expect((await readServiceSlices(sb, 'web')).flatMap(routedPods).sort()).toEqual(['gated', 'plain']);
  });
});
