import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeRequest, KubeApiError } from '../../kube/raw.js';
import { withLifecycle } from '../../functions/ops-lifecycle/client/index.js';
import { definition } from '../../functions/ops-lifecycle/definition.js';
import { perIdKey } from '../../functions/ops-lifecycle/protocol/index.js';
import { goClient, type GoAdapter } from '../fixtures/ops-lifecycle-go-client.js';
import { recordPod, waitPod, waitServing } from '../fixtures/ops-lifecycle-pods.js';
import { startTestWebhook, type TestWebhook } from '../fixtures/ops-lifecycle-webhook.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const UPDATE: GoAdapter = { id: 'collaset', type: 'update' };

/**
 * A kubelet of the test's own: a Node KWOK does not manage (no `kwok.x-k8s.io/node` annotation) and a loop that
 * writes `pods/status` AS that node (the admin impersonates `system:node:<name>` in `system:nodes`), so the
 * API server's Node authorizer and NodeRestriction judge every write as they judge a real kubelet's. Like a
 * kubelet, it computes Ready from its containers (always ready here) and every readiness gate.
 */
class NodeKubelet {
  readonly refused: string[] = [];
  readonly written: string[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly sb: TestSandbox,
    readonly node: string,
  ) {}

  /** PUT pods/status as the node: the stored Pod, or the API server's refusal. */
  async putStatus(pod: V1Pod): Promise<{ status: number; body: string }> {
    try {
      const stored = await kubeRequest(this.sb.kc, `/api/v1/namespaces/${this.sb.namespace}/pods/${pod.metadata?.name}/status`, {
        method: 'PUT',
        body: pod,
        headers: { 'Impersonate-User': `system:node:${this.node}`, 'Impersonate-Group': 'system:nodes' },
      });
      return { status: 200, body: JSON.stringify(stored) };
    } catch (err) {
      if (err instanceof KubeApiError) return { status: err.code, body: err.message };
      throw err;
    }
  }

  /** The status this kubelet would report for `pod`, or undefined when the stored one already says it. */
  desired(pod: V1Pod): V1Pod | undefined {
    const conditions = pod.status?.conditions ?? [];
    const gatesTrue = (pod.spec?.readinessGates ?? []).every((g) => conditions.find((c) => c.type === g.conditionType)?.status === 'True');
    const ready = gatesTrue ? 'True' : 'False';
    if (pod.status?.phase === 'Running' && conditions.find((c) => c.type === 'Ready')?.status === ready) return undefined;
    const now = new Date();
    const set = (type: string, status: string): V1PodCondition => ({ type, status, lastTransitionTime: now });
    const own = new Set(['Initialized', 'ContainersReady', 'Ready', 'PodScheduled']);
    return {
      ...pod,
      status: {
        ...pod.status,
        phase: 'Running',
        podIP: '10.244.9.9',
        conditions: [...conditions.filter((c) => !own.has(c.type)), set('PodScheduled', 'True'), set('Initialized', 'True'), set('ContainersReady', 'True'), set('Ready', ready)],
        containerStatuses: [{ name: 'main', image: 'registry.k8s.io/pause:3.10', imageID: '', ready: true, restartCount: 0, started: true, state: { running: { startedAt: now } } }],
      },
    };
  }

  /** Runs until stopped: every refused write is kept with its message (a conflict is a kubelet's retry). */
  start(name: string): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const pod = await this.sb.core.readNamespacedPod({ name, namespace: this.sb.namespace }).catch(() => undefined);
        const next = pod && this.desired(pod);
        if (next) {
          const res = await this.putStatus(next);
          if (res.status === 200) this.written.push(String((JSON.parse(res.body) as V1Pod).metadata?.resourceVersion));
          else if (res.status !== 409) this.refused.push(`${res.status} ${res.body}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

// The rule of admission/webhooks.ts isNodeWriter: a kubelet's pods/status write gets no transition. A webhook's
// change makes the API server run its in-tree mutating plugins again (reinvocation), NodeRestriction among them,
// and it refuses a node's status write whose labels differ from the stored Pod's. So a transition added to a
// kubelet's write would have that write refused on every retry, and the Pod would never be reported not Ready.
describe('ops-lifecycle webhook and a real node identity (NodeRestriction), OPS_LIFECYCLE_TRAFFIC_OFF=ready', () => {
  let sb: TestSandbox;
  let hook: TestWebhook;
  let ripple: RunningRipple;
  let kubelet: NodeKubelet;

  beforeAll(async () => {
    sb = await openSandbox('opslc-node');
    const node = `ripple-kubelet-${sb.namespace.slice(-6)}`;
    await sb.core.createNode({ body: { metadata: { name: node, labels: { 'kubernetes.io/hostname': node } } } });
    kubelet = new NodeKubelet(sb, node);
    hook = await startTestWebhook(sb, { trafficOff: 'ready' });
    ripple = await startRipple(sb, [definition({ OPS_LIFECYCLE_TRAFFIC_OFF: 'ready' })], { env: { OPS_LIFECYCLE_TRAFFIC_OFF: 'ready' } });
  });
  afterAll(async () => {
    await kubelet?.stop();
    await ripple?.stop();
    await hook?.stop();
    if (kubelet) await sb?.core.deleteNode({ name: kubelet.node }).catch(() => undefined);
    await sb?.cleanup();
  });

  it("the kubelet's write that turns Ready False is stored as sent, and operate comes in Ripple's own later write", async () => {
    const name = 'on-node';
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: withLifecycle<V1Pod>({ metadata: { name, labels: { app: name } }, spec: { nodeName: kubelet.node, containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } }),
    });
    const ref = { namespace: sb.namespace, name };
    // The Node authorizer learns the Pod→node edge from its own watch: the first writes may be refused for a moment.
    await waitFor(`the first status write as system:node:${kubelet.node} to be accepted`, 30_000, async () => {
      const pod = await sb.core.readNamespacedPod({ name, namespace: sb.namespace });
      const next = kubelet.desired(pod);
      return next === undefined || (await kubelet.putStatus(next)).status === 200;
    }, 200);

    // The sandbox judges node writes as a real cluster does: a label change through pods/status is refused.
    const stored = await sb.core.readNamespacedPod({ name, namespace: sb.namespace });
    const relabelled = await kubelet.putStatus({ ...stored, metadata: { ...stored.metadata, labels: { ...stored.metadata?.labels, forged: 'x' } } });
    expect(relabelled.status, relabelled.body).toBe(403);
    expect(relabelled.body).toContain('cannot update labels through pod status');

    kubelet.start(name);
    await waitServing(sb, ref);
    const rec = await recordPod(sb, name);
    try {
      await goClient(sb).begin(name, UPDATE);
      const operate = perIdKey('operate', UPDATE.id);
      await waitPod(sb, ref, 'operate granted', (p) => operate in (p.metadata?.labels ?? {}), 60_000).catch((err: unknown) => {
        throw new Error(`${String(err)}; kubelet writes stored at ${kubelet.written.join(',')}; refused: ${kubelet.refused.slice(-3).join(' | ') || 'none'}`);
      });
      await waitFor('the watch to deliver the version with operate', 10_000, async () => rec.snapshots.some((s) => operate in s.labels) || undefined, 50);

      expect(kubelet.refused, 'every kubelet status write accepted').toEqual([]);
      const notReady = rec.snapshots.find((s) => s.ready === 'False');
      expect(notReady, 'the kubelet reported Ready False').toBeDefined();
      expect(kubelet.written, 'Ready False was the kubelet’s own write').toContain(notReady?.resourceVersion);
      expect(notReady?.labels, 'the kubelet’s write was stored with the labels it had').not.toHaveProperty(operate);
      const granted = rec.snapshots.find((s) => operate in s.labels);
      expect(Number(granted?.resourceVersion)).toBeGreaterThan(Number(notReady?.resourceVersion));
    } finally {
      rec.stop();
    }
  });
});
