import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationClient, withLifecycle, type OperationAdapter } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { perIdKey } from '../../functions/ops-lifecycle/protocol/index.js';
import { sleep, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { recordTraffic, waitRouted, type TrafficEvent } from '../fixtures/ops-lifecycle-traffic.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const PODS = ['web-0', 'web-1', 'web-2'];
const TARGET = 'web-1';
const ID = 'upgrade';

/** The Pod's state after each event, replayed in etcd order: its labels and the Pods the Service routes to. */
interface Moment {
  event: TrafficEvent;
  operate: boolean;
  routed: Set<string>;
}

function replay(events: TrafficEvent[]): Moment[] {
  const slices = new Map<string, string[]>();
  let labels: Record<string, string> = {};
  const out: Moment[] = [];
  for (const e of events) {
    if (e.kind === 'EndpointSlice') slices.set(e.name, e.routed);
    else if (e.name === TARGET) labels = e.labels;
    out.push({
      event: e,
      // From the grant until the Pod is handed back at completing (operate, then operated and post-check).
      operate: perIdKey('operate', ID) in labels || (perIdKey('operated', ID) in labels && !(perIdKey('completing', ID) in labels)),
      routed: new Set([...slices.values()].flat()),
    });
  }
  return out;
}

// The seed's promise: no traffic loss. A Service routes to three opted-in Pods; an operation on one must take
// it out of every EndpointSlice before the operator is allowed to touch it, and put it back afterwards. The
// sandbox's KWOK stages make Ready follow the readiness gate, and the real EndpointSlice controller follows Ready.
describe('ops-lifecycle: traffic is off before operate', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-traffic');
    ripple = await startRipple(sb, [definition({})]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('no traffic loss (scenario 3): the operated Pod leaves the EndpointSlice before operate and returns after finish', async () => {
    await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
    });
    for (const name of PODS) {
      await sb.core.createNamespacedPod({
        namespace: sb.namespace,
        body: withLifecycle<V1Pod>({
          // A kubelet that reports Ready a second after the gate changes (the sandbox's KWOK stages honour
          // this annotation); the lifecycle must wait for it however long it takes.
          metadata: { name, labels: { app: 'web' }, annotations: { 'sandbox.ripple.dev/ready-delay': '1s' } },
          spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
        }),
      });
    }
    for (const name of PODS) await waitServing(sb, { namespace: sb.namespace, name });
    await waitRouted(sb, 'web', PODS);

    const rec = await recordTraffic(sb);
    const ops = operationClient({ kc: sb.kc });
    const ref = { namespace: sb.namespace, name: TARGET };
    const adapter: OperationAdapter = { id: ID, type: 'update', allowMultiType: true };
    await ops.begin(ref, adapter);
    const granted = await waitFor('operate to be granted', 30_000, async () => {
      const answer = await ops.allowOps(ref, adapter);
      return answer.allowed ? answer : undefined;
    }, 20);
    expect(granted.pod.metadata.labels).toHaveProperty(perIdKey('operate', ID));

    await ops.finish(ref, adapter);
    await waitServing(sb, ref);
    await waitRouted(sb, 'web', PODS);
    await sleep(500); // the two watches may still be delivering the last versions
    rec.stop();

    const moments = replay(rec.ordered());
    // Every event in etcd order, printed with any failure below.
    const timeline = moments
      .map((m) => {
        const e = m.event;
        const what = e.kind === 'Pod' ? `${e.name} ready=${e.ready} ${Object.keys(e.labels).filter((k) => k.endsWith(`/${ID}`)).map((k) => k.split('.')[0]).join(',')}` : `routes ${e.routed.join(',')}`;
        return `${e.rv} ${e.kind} ${e.type} ${what}${m.operate ? ' [operating]' : ''}`;
      })
      .join('\n');
    const firstOperate = moments.findIndex((m) => m.operate);
    expect(firstOperate, timeline).toBeGreaterThan(0);
    // Out of every slice strictly before operate appeared: some slice write dropped it earlier.
    const dropped = moments.findIndex((m) => m.event.kind === 'EndpointSlice' && !m.routed.has(TARGET));
    expect(dropped, `the Pod never left the EndpointSlice:\n${timeline}`).toBeGreaterThanOrEqual(0);
    expect(dropped, `operate (event ${firstOperate}) came before the EndpointSlice dropped the Pod (event ${dropped}):\n${timeline}`).toBeLessThan(firstOperate);
    // At every event while operate/operated is on the Pod, no slice routes to it.
    const leaks = moments.filter((m) => m.operate && m.routed.has(TARGET)).map((m) => `${m.event.kind}/${m.event.name}@${m.event.rv}`);
    expect(leaks, `events at which the Pod was routed while being operated:\n${timeline}`).toEqual([]);
    // The other two were routed throughout: the Service never lost them.
    const lost = moments.filter((m) => m.routed.size > 0 && !(m.routed.has('web-0') && m.routed.has('web-2')));
    expect(lost.map((m) => `${m.event.kind}/${m.event.name}@${m.event.rv}`)).toEqual([]);
    // Back after finish: the last slice state routes all three, after operated was gone.
    const last = moments[moments.length - 1];
    expect([...(last?.routed ?? [])].sort()).toEqual(PODS);
    const backIn = moments.findIndex((m, i) => i > firstOperate && m.event.kind === 'EndpointSlice' && m.routed.has(TARGET));
    expect(backIn).toBeGreaterThan(firstOperate);
    expect(moments[backIn]?.operate).toBe(false);
  });
});
