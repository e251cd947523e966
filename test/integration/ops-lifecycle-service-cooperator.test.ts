import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient, withLifecycle, type OperationAdapter } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { readPod } from '../../functions/ops-lifecycle/pod-access/pod-api.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, perIdKey } from '../../functions/ops-lifecycle/protocol/index.js';
import { SERVICE_COOPERATION_LABEL, serviceCooperator } from '../../functions/ops-lifecycle/service-cooperator/plan.js';
import { mustReadPod, recordPod, sleep, waitPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { recordTraffic, waitRouted } from '../fixtures/ops-lifecycle-traffic.js';
import { kubeRequest } from '../../kube/raw.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const PODS = ['web-0', 'web-1', 'web-2'];
const TARGET = 'web-1';
const ID = 'upgrade';

// The in-tree cooperation controller for plain Services (OPS_LIFECYCLE_SERVICE_COOPERATION). The lifecycle is
// told to judge traffic by the gate alone (OPS_LIFECYCLE_TRAFFIC_OFF=gate), so the only thing standing between the
// gate going False and operate is the Service's protection finalizer: the test shows that finalizer alone keeps
// operate back until the EndpointSlice controller has dropped the Pod (the sandbox's "kubelet" reports Ready a
// second late, so without it operate comes first).
describe('ops-lifecycle: the Service cooperator holds a Pod until it is out of the Service', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  const coop = () => serviceCooperator(sb.namespace, 'web');

  beforeAll(async () => {
    sb = await openSandbox('opslc-svccoop');
    ripple = await startRipple(sb, [definition({})], { env: { OPS_LIFECYCLE_SERVICE_COOPERATION: 'true', OPS_LIFECYCLE_TRAFFIC_OFF: 'gate' } });
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name: 'web', labels: { [SERVICE_COOPERATION_LABEL]: 'true' } }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
    });
    for (const name of PODS) {
      await sb.core.createNamespacedPod({
        namespace: sb.namespace,
        body: withLifecycle<V1Pod>({
          metadata: { name, labels: { app: 'web' }, annotations: { 'sandbox.ripple.dev/ready-delay': '1s' } },
          spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
        }),
      });
    }
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('holds every selected Pod with its finalizer and records the expectation', async () => {
    for (const name of PODS) {
      const pod = await waitPod(sb, { namespace: sb.namespace, name }, 'the Service finalizer', (p) => (p.metadata.finalizers ?? []).includes(coop().finalizer), 60_000);
      expect(JSON.parse(pod.metadata.annotations?.[AVAILABLE_CONDITIONS_ANNOTATION] ?? '{}')).toEqual({ expectedFinalizers: { [coop().key]: coop().finalizer } });
      await waitServing(sb, { namespace: sb.namespace, name });
    }
    await waitRouted(sb, 'web', PODS);
  });

  it('operate waits for the finalizer, and the finalizer for the EndpointSlice to drop the Pod; both come back after finish', async () => {
    const traffic = await recordTraffic(sb);
    const target = await recordPod(sb, TARGET);
    const ops = operationClient({ kc: sb.kc });
    const ref = { namespace: sb.namespace, name: TARGET };
    const adapter: OperationAdapter = { id: ID, type: 'update', allowMultiType: true };
    await ops.begin(ref, adapter);
    await waitFor('operate to be granted', 30_000, async () => (await ops.allowOps(ref, adapter)).allowed, 20);
    await ops.finish(ref, adapter);
    await waitServing(sb, ref);
    await waitPod(sb, ref, 'the finalizer back', (p) => (p.metadata.finalizers ?? []).includes(coop().finalizer));
    await waitRouted(sb, 'web', PODS);
    await sleep(500); // the watches may still be delivering the last versions
    traffic.stop();
    target.stop();

    const snaps = target.snapshots;
    const timeline = snaps.map((s) => `${s.resourceVersion} ready=${s.ready} gate=${s.serviceReady} fin=${s.finalizers.includes(coop().finalizer)} ${Object.keys(s.labels).filter((k) => k.endsWith(`/${ID}`)).map((k) => k.split('.')[0]).join(',')}`).join('\n');
    const released = snaps.find((s) => !s.finalizers.includes(coop().finalizer));
    const operate = snaps.find((s) => perIdKey('operate', ID) in s.labels);
    expect(released, `the finalizer was never released:\n${timeline}`).toBeDefined();
    expect(operate, timeline).toBeDefined();
    const releasedAt = BigInt(released?.resourceVersion ?? '0');
    const operateAt = BigInt(operate?.resourceVersion ?? '0');
    expect(releasedAt <= operateAt, `operate (${operateAt}) before the finalizer was released (${releasedAt}):\n${timeline}`).toBe(true);

    // The slice dropped the Pod strictly before the finalizer was released, and nothing routed to it from then on
    // until operate was over.
    // Operate is over at the first completing version after it; without one the window would be empty and no
    // leak could ever be seen.
    const completing = snaps.find((s) => BigInt(s.resourceVersion) > operateAt && perIdKey('completing', ID) in s.labels);
    expect(completing, `no completing version after operate:\n${timeline}`).toBeDefined();
    const completingAt = BigInt(completing?.resourceVersion ?? '0');
    const events = traffic.ordered();
    const slices = new Map<string, string[]>();
    let droppedAt: bigint | undefined;
    const leaks: string[] = [];
    for (const e of events) {
      if (e.kind !== 'EndpointSlice') continue;
      const before = slices.get(e.name) ?? [];
      slices.set(e.name, e.routed);
      const routed = [...slices.values()].flat().includes(TARGET);
      // Dropped by the slice that routed the Pod, not merely at the first event of some other slice.
      if (!routed && droppedAt === undefined && before.includes(TARGET)) droppedAt = e.rv;
      if (routed && e.rv >= operateAt && e.rv < completingAt) leaks.push(String(e.rv));
    }
    const sliceTimeline = events.filter((e) => e.kind === 'EndpointSlice').map((e) => `${e.rv} routes ${e.kind === 'EndpointSlice' ? e.routed.join(',') : ''}`).join('\n');
    expect(droppedAt, `the EndpointSlice never dropped ${TARGET}:\n${sliceTimeline}`).toBeDefined();
    expect((droppedAt ?? 0n) < releasedAt, `finalizer released at ${releasedAt}, slice dropped the Pod at ${droppedAt}:\n${timeline}\n${sliceTimeline}`).toBe(true);
    expect(leaks, `slice versions routing ${TARGET} while it was operated:\n${sliceTimeline}`).toEqual([]);
  });

  it('a deleted Pod is held only until the Service stops routing to it, then goes', async () => {
    const ref = { namespace: sb.namespace, name: 'web-0' };
    const traffic = await recordTraffic(sb);
    const pod = await recordPod(sb, 'web-0');
    await sb.core.deleteNamespacedPod({ namespace: sb.namespace, name: 'web-0' });
    await waitFor('web-0 to be gone', 60_000, async () => (await readPod(sb.kc, ref)) === undefined);
    await sleep(500);
    traffic.stop();
    pod.stop();
    const timeline = pod.snapshots.map((s) => `${s.resourceVersion} deleting=${s.deleting} ready=${s.ready} fin=${s.finalizers.join(',')}`).join('\n');
    // Nothing but the cooperator removes the finalizer (KWOK's pod-delete stage deletes, it does not clear
    // finalizers): the Pod is held while deleting, and it goes at the write that releases it.
    expect(pod.snapshots.some((s) => s.deleting && s.finalizers.includes(coop().finalizer)), `never held while deleting:\n${timeline}`).toBe(true);
    const released = pod.snapshots[pod.snapshots.length - 1];
    const slices = new Map<string, string[]>();
    let lastRouted = 0n;
    for (const e of traffic.ordered()) {
      if (e.kind !== 'EndpointSlice') continue;
      slices.set(e.name, e.routed);
      if ([...slices.values()].flat().includes('web-0')) lastRouted = e.rv;
    }
    expect(lastRouted < BigInt(released?.resourceVersion ?? '0'), `released at ${released?.resourceVersion}, still routed at ${lastRouted}:\n${timeline}`).toBe(true);
  });

  it('a Service that stops cooperating lets go of its Pods and forgets its expectation', async () => {
    await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/services/web`, {
      method: 'PATCH',
      body: { metadata: { labels: { [SERVICE_COOPERATION_LABEL]: null } } },
      contentType: 'application/merge-patch+json',
    });
    for (const name of PODS.slice(1)) {
      const pod = await waitPod(sb, { namespace: sb.namespace, name }, 'the Service finalizer released', (p) => !(p.metadata.finalizers ?? []).includes(coop().finalizer), 60_000);
      expect(JSON.parse(pod.metadata.annotations?.[AVAILABLE_CONDITIONS_ANNOTATION] ?? '{}').expectedFinalizers ?? {}).toEqual({});
    }
    // Still serving: stopping cooperation is not a lifecycle.
    for (const name of PODS.slice(1)) expect((await mustReadPod(sb, { namespace: sb.namespace, name })).metadata.labels?.[perIdKey('operate', ID)]).toBeUndefined();
    await waitRouted(sb, 'web', PODS.slice(1));
  });

  it('turning cooperation off lets go of the finalizers Pods still hold: operate is granted', async () => {
    // Cooperating again (flag on): the finalizers come back.
    await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/services/web`, {
      method: 'PATCH',
      body: { metadata: { labels: { [SERVICE_COOPERATION_LABEL]: 'true' } } },
      contentType: 'application/merge-patch+json',
    });
    for (const name of PODS.slice(1)) await waitPod(sb, { namespace: sb.namespace, name }, 'the Service finalizer back', (p) => (p.metadata.finalizers ?? []).includes(coop().finalizer), 60_000);
    // The same functions with the cooperator turned off.
    await ripple.stop();
    ripple = await startRipple(sb, [definition({})], { env: { OPS_LIFECYCLE_TRAFFIC_OFF: 'gate' } });
    const ops = operationClient({ kc: sb.kc });
    const ref = { namespace: sb.namespace, name: 'web-2' };
    const adapter: OperationAdapter = { id: 'after-off', type: 'update', allowMultiType: true };
    await ops.begin(ref, adapter);
    await waitFor('operate to be granted with cooperation off', 60_000, async () => (await ops.allowOps(ref, adapter)).allowed, 20);
    for (const name of PODS.slice(1)) {
      const pod = await waitPod(sb, { namespace: sb.namespace, name }, 'the Service finalizer released', (p) => !(p.metadata.finalizers ?? []).includes(coop().finalizer), 60_000);
      expect(JSON.parse(pod.metadata.annotations?.[AVAILABLE_CONDITIONS_ANNOTATION] ?? '{}').expectedFinalizers ?? {}).toEqual({});
    }
    await ops.finish(ref, adapter);
    await waitServing(sb, ref);
  });
});
