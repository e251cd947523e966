// Issue 15 scenario 5: an opted-in ModelServing's pods must not die undrained. Pods created before the opt-in
// carry no control label (and cannot gain the readiness gate in place); they are enrolled when their deletion
// begins, so a cooperator's protection finalizer holds them like any other pod.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definition as opsLifecycle } from '../../functions/ops-lifecycle/definition.js';
import { CONTROL_LABEL } from '../../functions/ops-lifecycle/client/index.js';
import { LabelPrefix, PROTECTION_FINALIZER_PREFIX } from '../../functions/ops-lifecycle/protocol/index.js';
import { isConflict } from '../../functions/ops-lifecycle/pod-access/pod-api.js';
import { LIFECYCLE_DELETION_FINALIZER, LIFECYCLE_OPT_IN_ANNOTATION } from '../../functions/reconcile-modelserving/lifecycle.js';
import { kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { countGets } from '../fixtures/ops-lifecycle-pods.js';
import { IMAGE_A, createMs, deleteMs, groupOf, listPods, modelServingFunctions, msManifest, patchMs, waitConverged, watchPods, type RoleOptions } from '../fixtures/modelserving-fixtures.js';

const OPERATE = `${LabelPrefix.operate}/modelserving`;
const OPERATING = `${LabelPrefix.operating}/modelserving`;
const PREPARING = `${LabelPrefix.preparing}/modelserving`;
const HOLD = `${PROTECTION_FINALIZER_PREFIX}/test-lb`;
const roles: RoleOptions[] = [{ name: 'main', replicas: 1, workerReplicas: 1, image: IMAGE_A }];

/** Every pod version of the ModelServing: which pods were marked for deletion, and whether operate came first. */
async function recordDeletions(sb: TestSandbox, name: string) {
  const granted = new Set<string>();
  /** Pod names seen with the lifecycle begun (operating), on any version the watch delivered. */
  const begun = new Set<string>();
  const deleted: Array<{ pod: string; granted: boolean }> = [];
  const w = await watchPods(sb, name, (_type, p: V1Pod) => {
    const key = `${p.metadata?.name}/${p.metadata?.uid}`;
    if (p.metadata?.labels?.[OPERATING] !== undefined) begun.add(p.metadata?.name ?? '');
    if (p.metadata?.labels?.[OPERATE] !== undefined) granted.add(key);
    if (p.metadata?.deletionTimestamp && !deleted.some((d) => d.pod === key)) deleted.push({ pod: key, granted: granted.has(key) });
  });
  return { begun, deleted, stop: () => w.stop() };
}

/** The Pod's finalizers set to exactly these, read-modify-write; the lifecycle and KWOK write the Pod meanwhile, so a conflict reads again. */
async function setFinalizers(sb: TestSandbox, pod: string, finalizers: string[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const current = await sb.core.readNamespacedPod({ name: pod, namespace: sb.namespace });
    current.metadata = { ...current.metadata, finalizers };
    try {
      await sb.core.replaceNamespacedPod({ name: pod, namespace: sb.namespace, body: current });
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= 20) throw err;
    }
  }
}

describe('ops-lifecycle: opted-in ModelServing pods are drained (scenario 5)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('opslc-msdrain');
    ripple = await startRipple(sb, modelServingFunctions([opsLifecycle()]));
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('a pod created before the opt-in is enrolled and drained through the lifecycle, not deleted at once', async () => {
    await createMs(sb, msManifest('pre', sb.namespace, { replicas: 2, roles }));
    const { pods } = await waitConverged(sb, 'pre', { podsPerGroup: 2 });
    expect(pods.every((p) => p.metadata?.labels?.[CONTROL_LABEL] === undefined)).toBe(true);
    // A load balancer serves pre-1's entry pod (it holds it the PodOpsLifecycle way).
    await setFinalizers(sb, 'pre-1-main-0-0', [HOLD]);

    const rec = await recordDeletions(sb, 'pre');
    await patchMs(sb, 'pre', { metadata: { annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'true' } }, spec: { replicas: 1 } });
    // Enrolled and begun; the held pod waits in preparing for the load balancer.
    const held = await waitFor('pre-1-main-0-0 enrolled and preparing', 30_000, async () => {
      const p = (await listPods(sb, 'pre')).find((x) => x.metadata?.name === 'pre-1-main-0-0');
      return p?.metadata?.labels?.[PREPARING] !== undefined ? p : undefined;
    });
    expect(held.metadata?.labels?.[CONTROL_LABEL]).toBe('true');
    expect(held.metadata?.labels?.[OPERATING]).toBeDefined();
    expect(held.metadata?.deletionTimestamp).toBeUndefined();
    expect(rec.deleted.filter((d) => d.pod.startsWith('pre-1-main-0-0/'))).toEqual([]);

    await setFinalizers(sb, 'pre-1-main-0-0', []);
    const done = await waitConverged(sb, 'pre', { podsPerGroup: 2, timeoutMs: 60_000 });
    rec.stop();
    expect(done.pods.every((p) => groupOf(p) === 'pre-0')).toBe(true);
    expect(rec.deleted.map((d) => d.pod.split('/')[0]).sort()).toEqual(['pre-1-main-0-0', 'pre-1-main-0-1']);
    expect(rec.deleted.filter((d) => !d.granted), 'deleted without operate').toEqual([]);
  });

  it('deleting an opted-in ModelServing drains every pod through the lifecycle before the owner and its pods go', async () => {
    const ms = await createMs(sb, msManifest('del', sb.namespace, { replicas: 1, annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'true' }, roles }));
    await waitConverged(sb, 'del', { podsPerGroup: 2 });
    const path = objectPath(Resources.modelServing, sb.namespace, 'del');
    const finalizersOf = async () => {
      try {
        const raw = (await kubeRequest(sb.kc, path)) as { metadata?: { finalizers?: string[]; deletionTimestamp?: string } };
        return { finalizers: raw.metadata?.finalizers ?? [], deleting: raw.metadata?.deletionTimestamp !== undefined };
      } catch {
        return undefined;
      }
    };
    await waitFor('the ModelServing to hold its deletion finalizer', 30_000, async () => (await finalizersOf())?.finalizers.includes(LIFECYCLE_DELETION_FINALIZER));
    await setFinalizers(sb, 'del-0-main-0-0', [HOLD]);

    const rec = await recordDeletions(sb, 'del');
    await deleteMs(sb, 'del');
    // Both pods begin their lifecycle; the held one waits for its load balancer, and so does the owner. Observed on
    // the watch: the pod nothing holds may be drained and gone before a poll of the list sees it begun.
    await waitFor('both pods begun', 30_000, async () => rec.begun.has('del-0-main-0-0') && rec.begun.has('del-0-main-0-1')).catch((err: unknown) => {
      throw new Error(`${String(err)} (seen begun: ${JSON.stringify([...rec.begun])}, deleted: ${JSON.stringify(rec.deleted)})`);
    });
    await waitFor('del-0-main-0-0 preparing', 30_000, async () => (await listPods(sb, 'del')).find((p) => p.metadata?.name === 'del-0-main-0-0')?.metadata?.labels?.[PREPARING] !== undefined);
    const owner = await finalizersOf();
    expect(owner, 'the ModelServing went before its pods were drained').toBeDefined();
    expect(owner?.deleting).toBe(true);
    expect(rec.deleted.filter((d) => d.pod.startsWith('del-0-main-0-0/'))).toEqual([]);

    await setFinalizers(sb, 'del-0-main-0-0', []);
    await waitFor('the ModelServing and its pods to be gone', 60_000, async () => (await finalizersOf()) === undefined && (await listPods(sb, 'del')).length === 0);
    rec.stop();
    expect(rec.deleted.map((d) => d.pod.split('/')[0]).sort()).toEqual(['del-0-main-0-0', 'del-0-main-0-1']);
    expect(rec.deleted.filter((d) => !d.granted), 'deleted without operate').toEqual([]);
    expect(ms.metadata.uid).toBeDefined();
  });

  it('a deletion held by a cooperator costs no requests while it waits (scenario 7: event-driven, not a poll)', async () => {
    await createMs(sb, msManifest('ev', sb.namespace, { replicas: 2, annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'true' }, roles }));
    await waitConverged(sb, 'ev', { podsPerGroup: 2 });
    await setFinalizers(sb, 'ev-1-main-0-0', [HOLD]);
    await patchMs(sb, 'ev', { spec: { replicas: 1 } });
    await waitFor('ev-1-main-0-0 preparing', 30_000, async () => (await listPods(sb, 'ev')).find((p) => p.metadata?.name === 'ev-1-main-0-0')?.metadata?.labels?.[PREPARING] !== undefined);
    // Its group's other pod is not held: let its deletion (and the events it brings) finish first.
    await waitFor('ev-1-main-0-1 gone', 30_000, async () => !(await listPods(sb, 'ev')).some((p) => p.metadata?.name === 'ev-1-main-0-1'));
    await new Promise((r) => setTimeout(r, 1_500)); // the last events' reconciles finish
    // 6 s of a held deletion: the 2 s poll this replaced would have read the pod 3 times.
    const gets = countGets(`/namespaces/${sb.namespace}/pods/ev-1-main-0-0`);
    await new Promise((r) => setTimeout(r, 6_000));
    gets.stop();
    expect(gets.count(), 'GETs of the held pod while nothing changed').toBeLessThanOrEqual(1);

    await setFinalizers(sb, 'ev-1-main-0-0', []);
    const done = await waitConverged(sb, 'ev', { podsPerGroup: 2, timeoutMs: 60_000 });
    expect(done.pods.every((p) => groupOf(p) === 'ev-0')).toBe(true);
  });
});
