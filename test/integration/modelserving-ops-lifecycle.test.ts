// PodOpsLifecycle opt-in on the sandbox, with the ops-lifecycle function running beside
// reconcile-modelserving: pods are created enrolled (control label, service-ready gate), and every pod
// the ModelServing removes — rolling update and scale-down — goes begin → operate → delete. A
// cooperator's protection finalizer (a load balancer still serving the pod) holds the deletion, and
// the rollout with it, until the cooperator lets go.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definition as opsLifecycle } from '../../functions/ops-lifecycle/definition.js';
import { CONTROL_LABEL, SERVICE_READY_CONDITION } from '../../functions/ops-lifecycle/client/index.js';
import { LabelPrefix, PROTECTION_FINALIZER_PREFIX } from '../../functions/ops-lifecycle/protocol/index.js';
import { LIFECYCLE_OPT_IN_ANNOTATION } from '../../functions/reconcile-modelserving/lifecycle.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  IMAGE_A,
  IMAGE_B,
  createMs,
  groupOf,
  imageOf,
  listPods,
  modelServingFunctions,
  msManifest,
  patchMs,
  rolesPatch,
  waitConverged,
  watchPods,
  type RoleOptions,
} from '../fixtures/modelserving-fixtures.js';

const OPERATE = `${LabelPrefix.operate}/modelserving`;
const OPERATING = `${LabelPrefix.operating}/modelserving`;
const HOLD = `${PROTECTION_FINALIZER_PREFIX}/test-lb`;
const roles = (image: string): RoleOptions[] => [{ name: 'main', replicas: 1, workerReplicas: 1, image }];

/** For every pod that was deleted: did some version of it carry `operate` for our ID before that? */
async function recordDeletions(sb: TestSandbox, name: string) {
  const granted = new Set<string>();
  const deleted: Array<{ pod: string; granted: boolean }> = [];
  const w = await watchPods(sb, name, (_type, p: V1Pod) => {
    const key = `${p.metadata?.name}/${p.metadata?.uid}`;
    if (p.metadata?.labels?.[OPERATE] !== undefined) granted.add(key);
    if (p.metadata?.deletionTimestamp && !deleted.some((d) => d.pod === key)) deleted.push({ pod: key, granted: granted.has(key) });
  });
  return { deleted, stop: () => w.stop() };
}

async function setFinalizers(sb: TestSandbox, pod: string, finalizers: string[]): Promise<void> {
  const current = await sb.core.readNamespacedPod({ name: pod, namespace: sb.namespace });
  current.metadata = { ...current.metadata, finalizers };
  await sb.core.replaceNamespacedPod({ name: pod, namespace: sb.namespace, body: current });
}

describe('ModelServing with PodOpsLifecycle', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('ms-opslc');
    ripple = await startRipple(sb, modelServingFunctions([opsLifecycle()]));
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('creates enrolled pods, and a rolling update waits for the cooperator before deleting through the lifecycle', async () => {
    await createMs(sb, msManifest('lc', sb.namespace, { replicas: 2, annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'true' }, roles: roles(IMAGE_A) }));
    const { pods } = await waitConverged(sb, 'lc', { podsPerGroup: 2 });
    for (const p of pods) {
      expect(p.metadata?.labels?.[CONTROL_LABEL]).toBe('true');
      expect(p.spec?.readinessGates).toEqual([{ conditionType: SERVICE_READY_CONDITION }]);
    }

    // A load balancer still serves lc-1's entry pod.
    await setFinalizers(sb, 'lc-1-main-0-0', [HOLD]);
    const rec = await recordDeletions(sb, 'lc');
    await patchMs(sb, 'lc', rolesPatch(roles(IMAGE_B)));

    // The lifecycle begins on lc-1 (highest ordinal first) but nothing is deleted while it is held,
    // and lc-0 waits its turn (maxUnavailable 1: lc-1 counts as unavailable while it drains).
    await waitFor('lc-1 pods begun', 20_000, async () => {
      const ps = (await listPods(sb, 'lc')).filter((p) => groupOf(p) === 'lc-1');
      return ps.length === 2 && ps.every((p) => p.metadata?.labels?.[OPERATING] !== undefined);
    });
    await new Promise((r) => setTimeout(r, 3_000));
    const held = await listPods(sb, 'lc');
    expect(held.find((p) => p.metadata?.name === 'lc-1-main-0-0')?.metadata?.deletionTimestamp).toBeUndefined();
    expect(held.filter((p) => groupOf(p) === 'lc-0').every((p) => imageOf(p) === IMAGE_A && !p.metadata?.labels?.[OPERATING])).toBe(true);

    // The load balancer lets go: the rollout completes, every pod replaced through the lifecycle.
    await setFinalizers(sb, 'lc-1-main-0-0', []);
    const done = await waitConverged(sb, 'lc', { podsPerGroup: 2, timeoutMs: 60_000, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_B) });
    rec.stop();
    expect(done.pods.every((p) => p.metadata?.labels?.[CONTROL_LABEL] === 'true')).toBe(true);
    expect(rec.deleted).toHaveLength(4);
    expect(rec.deleted.every((d) => d.granted)).toBe(true);
  });

  it('scale-down deletes through the lifecycle too', async () => {
    const rec = await recordDeletions(sb, 'lc');
    await patchMs(sb, 'lc', { spec: { replicas: 1 } });
    const { pods } = await waitConverged(sb, 'lc', { podsPerGroup: 2, timeoutMs: 60_000 });
    rec.stop();
    expect(pods.every((p) => groupOf(p) === 'lc-0')).toBe(true);
    expect(rec.deleted.map((d) => d.pod.split('/')[0]).sort()).toEqual(['lc-1-main-0-0', 'lc-1-main-0-1']);
    expect(rec.deleted.every((d) => d.granted)).toBe(true);
  });
});
