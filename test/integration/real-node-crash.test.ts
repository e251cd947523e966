import { CoreV1Api, type CoreV1Event, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMs, getMs, modelServingFunctions, msReadSchema, type MsRead } from '../fixtures/modelserving-fixtures.js';
import { realNodeMs } from '../fixtures/real-node-ms.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { useRealNode } from '../harness/real-node.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { watchEvents } from '../harness/watch-events.js';

// Seed 000's "a Running role falls back to Creating" and seed 002's Degraded, from a container that really
// exits on the real node (not a patched pod status): the kubelet sees the exit, the probe turns the pod unready,
// restartCount goes up, and Ripple answers with the Events, the recovery policy's action and the phases.
describe('a ModelServing container that really crashes on the real node', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  beforeAll(async () => {
    await useRealNode();
    sb = await openSandbox('rn-crash');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  /** Every event of one kind in the namespace from now on (a watch: short states are not missed). */
  async function record<T>(path: string, keep: (type: string, obj: T) => boolean): Promise<{ seen: T[]; stop(): void }> {
    const seen: T[] = [];
    const req = await watchEvents(sb.kc, path, {}, (type: string, obj: T) => void (keep(type, obj) && seen.push(obj)));
    return { seen, stop: () => req.abort() };
  }
  const running = async (name: string) => {
    const ms = await getMs(sb, name);
    return ms?.status?.phase === 'Ready' && ms.status.availableReplicas === ms.spec.replicas ? ms : undefined;
  };
  const crash = async (pod: V1Pod) => {
    const answer = await fetch(`http://${pod.status?.podIP}:8080/exit?code=3`);
    expect(await answer.text()).toContain('exiting with 3');
  };
  const podOf = async (name: string) =>
    (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `modelserving.volcano.sh/name=${name}` })).items;

  // RoleRecreate with no grace, and a model that takes 4 s to load: the restarted, unready pod is broken, and the
  // role is recreated. None with a 30 s grace: the kubelet's restart heals it first, and nothing is deleted.
  const cases = [
    { policy: 'RoleRecreate', restartGracePeriodSeconds: 0, readyAfterSeconds: 4 },
    { policy: 'None', restartGracePeriodSeconds: 30, readyAfterSeconds: 0 },
  ] as const;
  for (const { policy, ...timing } of cases) {
    it(`${policy}: the role falls back to Creating with a Warning, the ModelServing turns Degraded, and both recover (phase Ready again)`, async () => {
      const name = `crash-${policy.toLowerCase()}`;
      await createMs(sb, realNodeMs(name, sb.namespace, { replicas: 2, recoveryPolicy: policy, ...timing }));
      await waitFor(`${name} Ready on real pods`, 120_000, () => running(name));
      const pods = await podOf(name);
      const victim = pods.find((p) => p.metadata?.labels?.['modelserving.volcano.sh/group-name'] === `${name}-0`);
      expect(victim?.status?.containerStatuses?.[0]?.restartCount).toBe(0);

      const phases = await record<unknown>(`/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${sb.namespace}/modelservings`, (_t, o) => msReadSchema.safeParse(o).data?.metadata.name === name);
      const podEvents = await record<V1Pod>(`/api/v1/namespaces/${sb.namespace}/pods`, (_t, p) => p.metadata?.name === victim?.metadata?.name);
      await crash(victim ?? {});

      const role = `Role main/main-0 in ServingGroup ${name}-0`;
      const events = await waitFor(`the Warning, then RoleRunning again for ${role}`, 120_000, async () => {
        const list = (await sb.kc.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: sb.namespace, fieldSelector: `involvedObject.name=${name}` })).items;
        const mine = list.filter((e) => e.message?.startsWith(role));
        const warning = mine.find((e) => e.type === 'Warning' && e.reason === 'RoleCreating');
        // RoleRunning again: a second count of the first Event, or a newer Event than the Warning.
        const back = mine.some((e) => e.reason === 'RoleRunning' && ((e.count ?? 1) >= 2 || (warning !== undefined && time(e) > time(warning))));
        return warning && back ? mine : undefined;
      });
      await waitFor(`${name} Ready again`, 120_000, () => running(name));
      phases.stop();
      podEvents.stop();

      expect(events.find((e) => e.type === 'Warning')).toMatchObject({ reason: 'RoleCreating', message: `${role} is now Creating` });
      // The kubelet counted the exit: a real restartCount and the exit code, seen on the pod as it happened.
      const exited = podEvents.seen.find((p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1);
      expect(exited?.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode).toBe(3);
      const seenPhases = phases.seen.map((o) => msReadSchema.parse(o)).map((m: MsRead) => m.status?.phase);
      expect(seenPhases).toContain('Degraded');
      expect(seenPhases.at(-1)).toBe('Ready');
      const after = (await podOf(name)).find((p) => p.metadata?.name === victim?.metadata?.name);
      if (policy === 'RoleRecreate') {
        // The recovery action: the role's pod was deleted and created again (a new UID), as Kthena does.
        expect(events.some((e) => e.reason === 'RoleDeleting')).toBe(true);
        expect(after?.metadata?.uid).not.toBe(victim?.metadata?.uid);
      } else {
        // No recovery action: the kubelet's restart brought the same pod back.
        expect(events.some((e) => e.reason === 'RoleDeleting')).toBe(false);
        expect(after?.metadata?.uid).toBe(victim?.metadata?.uid);
        expect(after?.status?.containerStatuses?.[0]?.restartCount).toBe(1);
      }
    }, 300_000);
  }
});

function time(e: CoreV1Event): number {
  const t = e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp;
  return t ? new Date(t).getTime() : 0;
}
