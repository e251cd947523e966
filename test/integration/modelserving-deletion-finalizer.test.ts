// The PodOpsLifecycle deletion finalizer must never make a ModelServing undeletable: an opted-in ModelServing whose
// spec stopped parsing is still drained and deleted; removing the opt-in while the deletion waits lets it complete;
// a drain that waits too long says so with one Warning naming the pods and their stage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definition as opsLifecycle } from '../../functions/ops-lifecycle/definition.js';
import { LabelPrefix, PROTECTION_FINALIZER_PREFIX } from '../../functions/ops-lifecycle/protocol/index.js';
import { LIFECYCLE_DELETION_FINALIZER, LIFECYCLE_OPT_IN_ANNOTATION } from '../../functions/reconcile-modelserving/lifecycle.js';
import { kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { eventsAbout } from '../fixtures/emit-events-cluster.js';
import { condition, createMs, deleteMs, IMAGE_A, listPods, modelServingFunctions, msManifest, mustGetMs, patchMs, waitConverged, type RoleOptions } from '../fixtures/modelserving-fixtures.js';
import { countApiRequests } from '../harness/api-requests.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const PREPARING = `${LabelPrefix.preparing}/modelserving`;
const HOLD = `${PROTECTION_FINALIZER_PREFIX}/test-lb`;
const roles: RoleOptions[] = [{ name: 'main', replicas: 1, workerReplicas: 1, image: IMAGE_A }];
const WARN_AFTER_MS = 4_000;

async function setPodFinalizers(sb: TestSandbox, pod: string, finalizers: string[]): Promise<void> {
  const current = await sb.core.readNamespacedPod({ name: pod, namespace: sb.namespace });
  current.metadata = { ...current.metadata, finalizers };
  await sb.core.replaceNamespacedPod({ name: pod, namespace: sb.namespace, body: current });
}

/** The ModelServing's finalizers, or undefined once it is gone. */
async function finalizersOf(sb: TestSandbox, name: string): Promise<string[] | undefined> {
  try {
    const raw = (await kubeRequest(sb.kc, objectPath(Resources.modelServing, sb.namespace, name))) as { metadata?: { finalizers?: string[] } };
    return raw.metadata?.finalizers ?? [];
  } catch {
    return undefined;
  }
}

async function optedInAndHeld(sb: TestSandbox, name: string): Promise<void> {
  await createMs(sb, msManifest(name, sb.namespace, { replicas: 1, annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'true' }, roles }));
  await waitConverged(sb, name, { podsPerGroup: 2 });
  await waitFor(`${name} to hold its deletion finalizer`, 30_000, async () => (await finalizersOf(sb, name))?.includes(LIFECYCLE_DELETION_FINALIZER));
}


describe('ModelServing deletion finalizer (PodOpsLifecycle opt-in)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('ms-delfin');
    ripple = await startRipple(sb, modelServingFunctions([opsLifecycle()]), { env: { MODELSERVING_DELETION_WARN_AFTER_MS: String(WARN_AFTER_MS) } });
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('an opted-in ModelServing whose spec no longer parses is still drained and deleted', async () => {
    await optedInAndHeld(sb, 'inv');
    // Valid to the CRD, invalid to the function: a gang policy naming a role that does not exist.
    await patchMs(sb, 'inv', { spec: { template: { gangPolicy: { minRoleReplicas: { decode: 1 } } } } });
    await waitFor('inv reported invalid', 30_000, async () => condition(await mustGetMs(sb, 'inv'), 'ConfigValid')?.status === 'False');
    await deleteMs(sb, 'inv');
    await waitFor('inv and its pods to be gone', 60_000, async () => (await finalizersOf(sb, 'inv')) === undefined && (await listPods(sb, 'inv')).length === 0);
  });

  it('the status write after adding or removing the finalizer uses the resourceVersion that write left (no 409)', async () => {
    const statusPath = `${objectPath(Resources.modelServing, sb.namespace, 'rv')}/status`;
    const conflicts = countApiRequests('PATCH', (path) => path.endsWith(statusPath));
    try {
      await optedInAndHeld(sb, 'rv');
      await patchMs(sb, 'rv', { metadata: { annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: null } } });
      await waitFor('rv to let go of its finalizer', 30_000, async () => !(await finalizersOf(sb, 'rv'))?.includes(LIFECYCLE_DELETION_FINALIZER));
      await waitConverged(sb, 'rv', { podsPerGroup: 2 });
    } finally {
      conflicts.stop();
    }
    expect(conflicts.answered()[409] ?? 0).toBe(0);
  });

  it('a held deletion waits with one Warning naming the pods and stage, and removing the opt-in lets it complete', async () => {
    await optedInAndHeld(sb, 'out');
    await setPodFinalizers(sb, 'out-0-main-0-0', [HOLD]);
    try {
      await deleteMs(sb, 'out');
      await waitFor('out-0-main-0-0 preparing', 30_000, async () => (await listPods(sb, 'out')).find((p) => p.metadata?.name === 'out-0-main-0-0')?.metadata?.labels?.[PREPARING] !== undefined);
      // Past the bound, one Warning, though nothing else brings the ModelServing back (the waits are event-driven).
      const warned = await waitFor('a DeletionHeld Warning', 60_000, async () => {
        const held = (await eventsAbout(sb.kc, sb.namespace, 'out')).filter((e) => e.reason === 'DeletionHeld');
        return held.length > 0 ? held : undefined;
      });
      expect(warned).toHaveLength(1);
      expect(warned[0]?.type).toBe('Warning');
      expect(warned[0]?.count).toBe(1);
      // Preparing by now, unless a loaded machine kept the lifecycle from getting there within the bound.
      expect(warned[0]?.message).toMatch(/out-0-main-0-0 \((Preparing|Begun)\)/);
      expect(await finalizersOf(sb, 'out')).toContain(LIFECYCLE_DELETION_FINALIZER);

      // Opting out while the deletion waits lets go of the finalizer: the ModelServing goes.
      await patchMs(sb, 'out', { metadata: { annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: null } } });
      await waitFor('out to be gone', 60_000, async () => (await finalizersOf(sb, 'out')) === undefined);
      const after = (await eventsAbout(sb.kc, sb.namespace, 'out')).filter((e) => e.reason === 'DeletionHeld');
      expect(after.map((e) => e.count)).toEqual([1]);
    } finally {
      await setPodFinalizers(sb, 'out-0-main-0-0', []).catch(() => undefined);
    }
    await waitFor('out pods to be gone', 60_000, async () => (await listPods(sb, 'out')).length === 0);
  });
});
