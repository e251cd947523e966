// Issue 13 on the sandbox: ModelServings on a slow, messy cluster. Pods that take their time to
// terminate are real here: the test holds a pod with a finalizer of its own (KWOK deletes pods at
// once otherwise) and releases it when it has seen what it wants. Scenarios: 1 (a partition-protected
// group rebuilt while its pod terminates), 3 (an HPA scaling through the scale subresource past the
// generated-name length), 10 (a namespace being deleted under a live ModelServing).
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../../kube/resources.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { definition as emitEventsDefinition } from '../../functions/emit-events/definition.js';
import { RECONCILE_MODELSERVING, definition as modelServingDefinition } from '../../functions/reconcile-modelserving/definition.js';
import { readRoleStatus } from '../../functions/reconcile-modelserving/role-store.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { watchEvents } from '../harness/watch-events.js';
import {
  IMAGE_A,
  IMAGE_B,
  IMAGE_C,
  condition,
  createMs,
  getMs,
  groupOf,
  imageOf,
  isReady,
  listPods,
  listServiceNames,
  modelServingFunctions,
  msManifest,
  mustGetMs,
  patchMs,
  revisionOf,
  rolesPatch,
  waitConverged,
  type MsRead,
} from '../fixtures/modelserving-fixtures.js';

const HOLD = 'ripple.dev/test-hold';
const ordinal = (p: V1Pod) => Number(groupOf(p).split('-').pop());
const one = (image: string) => [{ name: 'main', replicas: 1, workerReplicas: 0, image }];

async function setFinalizers(sb: TestSandbox, name: string, finalizers: string[] | null): Promise<void> {
  try {
    await kubeRequest(sb.kc, objectPath(Resources.pod, sb.namespace, name), {
      method: 'PATCH',
      body: { metadata: { finalizers } },
      contentType: 'application/merge-patch+json',
    });
  } catch (err) {
    if (!(finalizers === null && isStatus(err, 404))) throw err;
  }
}

async function controllerRevisionNames(sb: TestSandbox, msName: string): Promise<string[]> {
  const res = await kubeRequest(sb.kc, collectionPath(Resources.controllerRevision, sb.namespace), {
    query: { labelSelector: `modelserving.volcano.sh/name=${msName}` },
  });
  const items = (res as { items?: Array<{ metadata?: { name?: string } }> }).items ?? [];
  return items.map((i) => i.metadata?.name ?? '').sort();
}

describe('ModelServing under churn (issue 13)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple | undefined;
  const held: string[] = [];

  beforeAll(async () => {
    sb = await openSandbox('ms-churn');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    for (const name of held) await setFinalizers(sb, name, null);
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('scenario 1: a partition-protected group whose pod terminates slowly keeps currentRevision and comes back on it', async () => {
    await createMs(sb, msManifest('p1', sb.namespace, { replicas: 2, partition: 1, roles: one(IMAGE_A) }));
    const a = (await waitConverged(sb, 'p1', { podsPerGroup: 1 })).ms.status?.updateRevision ?? '';
    await patchMs(sb, 'p1', rolesPatch(one(IMAGE_B)));
    const updated = await waitConverged(sb, 'p1', {
      podsPerGroup: 1,
      extra: (_m, ps) => ps.some((p) => ordinal(p) === 1 && imageOf(p) === IMAGE_B),
    });
    const b = updated.ms.status?.updateRevision ?? '';
    expect(b).not.toBe(a);
    expect(updated.ms.status).toMatchObject({ currentRevision: a, updateRevision: b });
    const old = updated.pods.find((p) => ordinal(p) === 0);
    const oldName = old?.metadata?.name ?? '';
    expect(revisionOf(old as V1Pod)).toBe(a);

    // Group 0's pod is deleted and takes its time to terminate: the test's finalizer holds it.
    held.push(oldName);
    await setFinalizers(sb, oldName, [HOLD]);
    await sb.core.deleteNamespacedPod({ name: oldName, namespace: sb.namespace });
    // The reconcile that saw it terminating wrote status: group 0 is no longer available.
    const during = await waitFor('status to see group 0 terminating', 60_000, async () => {
      const ms = await getMs(sb, 'p1');
      return ms?.status?.availableReplicas === 1 && ms.status.observedGeneration === ms.metadata.generation ? ms : false;
    });
    expect(during.status).toMatchObject({ currentRevision: a, updateRevision: b });
    expect(await controllerRevisionNames(sb, 'p1')).toContain(`p1-${a}`);
    const stillHeld = (await listPods(sb, 'p1')).find((p) => p.metadata?.name === oldName);
    expect(stillHeld?.metadata?.deletionTimestamp).toBeDefined();

    // Released: group 0 comes back on the old revision and image, and revision A is still recorded.
    await setFinalizers(sb, oldName, null);
    const rebuilt = await waitConverged(sb, 'p1', {
      podsPerGroup: 1,
      extra: (_m, ps) => ps.some((p) => ordinal(p) === 0 && p.metadata?.uid !== old?.metadata?.uid),
    });
    const group0 = rebuilt.pods.find((p) => ordinal(p) === 0) as V1Pod;
    expect({ revision: revisionOf(group0), image: imageOf(group0) }).toEqual({ revision: a, image: IMAGE_A });
    expect(rebuilt.ms.status).toMatchObject({ currentRevision: a, updateRevision: b, currentReplicas: 1, updatedReplicas: 1 });
    expect(await controllerRevisionNames(sb, 'p1')).toEqual([`p1-${a}`, `p1-${b}`].sort());
  });

  it('scenario 2: a protected group lost while scaling down is recreated, and an unprotected one goes in its place', async () => {
    await createMs(sb, msManifest('p2', sb.namespace, { replicas: 5, partition: 3, roles: one(IMAGE_A) }));
    const a = (await waitConverged(sb, 'p2', { podsPerGroup: 1 })).ms.status?.updateRevision ?? '';
    // While the controller is down, group 2 is lost (a node failure) and the user scales to 4.
    await ripple?.stop();
    ripple = undefined;
    await sb.core.deleteNamespacedPod({ name: 'p2-2-main-0-0', namespace: sb.namespace, gracePeriodSeconds: 0 });
    await waitFor('group 2 gone', 30_000, async () => !(await listPods(sb, 'p2')).some((p) => ordinal(p) === 2));
    await patchMs(sb, 'p2', { spec: { replicas: 4 } });
    ripple = await startRipple(sb, modelServingFunctions());
    const { pods } = await waitConverged(sb, 'p2', {
      podsPerGroup: 1,
      extra: (_m, ps) => ps.some((p) => ordinal(p) === 2) || ps.some((p) => ordinal(p) === 4),
    });
    expect(pods.map(ordinal).sort()).toEqual([0, 1, 2, 3]);
    expect(pods.every((p) => revisionOf(p) === a)).toBe(true);
  });

  it('scenario 6: a pod of someone else holding a needed name is reported on status, and the group completes once it goes', async () => {
    // A bare pod (no labels, no owner) that happens to have the name of group 0's entry pod.
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: { metadata: { name: 'fp-0-main-0-0' }, spec: { containers: [{ name: 'main', image: IMAGE_A }] } },
    });
    await createMs(sb, msManifest('fp', sb.namespace, { replicas: 2, roles: one(IMAGE_A) }));
    const reported = await waitFor('status to name the pod that holds the name', 60_000, async () => {
      const ms = await getMs(sb, 'fp');
      return condition(ms, 'ServingGroupsReady')?.reason === 'NameTaken' ? ms : false;
    }, 250);
    expect(reported.status?.phase).toBe('Degraded');
    expect(condition(reported, 'ServingGroupsReady')?.message).toContain('pod fp-0-main-0-0 exists and is not owned by this ModelServing');
    expect(condition(reported, 'Available')?.status).not.toBe('True');
    await sb.core.deleteNamespacedPod({ name: 'fp-0-main-0-0', namespace: sb.namespace, gracePeriodSeconds: 0 });
    // Its deletion is no event of this ModelServing: the slow re-check (30 s) brings it back.
    const { pods } = await waitConverged(sb, 'fp', { podsPerGroup: 1, timeoutMs: 90_000 });
    expect(pods.every((p) => p.metadata?.ownerReferences?.[0]?.name === 'fp')).toBe(true);
  });

  it('scenario 9: a spec that turns invalid on an Available ModelServing leaves no Available=True beside phase Failed', async () => {
    await createMs(sb, msManifest('iv', sb.namespace, { replicas: 1, roles: one(IMAGE_A) }));
    await waitConverged(sb, 'iv', { podsPerGroup: 1 });
    // A container without an image: the PodSpec schema allows it, only the function judges it (ConfigValid=False,
    // phase Failed). (Two containers of one name no longer serve: the CRD's PodSpec refuses the duplicate key.)
    await patchMs(sb, 'iv', {
      spec: { template: { roles: [{ name: 'main', replicas: 1, workerReplicas: 0, entryTemplate: { spec: { containers: [{ name: 'main' }] } } }] } },
    });
    const failed = await waitFor('the invalid spec on status', 60_000, async () => {
      const ms = await getMs(sb, 'iv');
      return ms?.status?.phase === 'Failed' && ms.status.observedGeneration === ms.metadata.generation ? ms : false;
    }, 250);
    expect(condition(failed, 'ConfigValid')?.status).toBe('False');
    expect(condition(failed, 'Available')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(condition(failed, 'Ready')?.status).toBe('False');
  });

  it('scenario 7: a pod that restarted once and recovered is not recreated on a later readiness blip; a new restart recreates it', async () => {
    await createMs(sb, msManifest('rs', sb.namespace, { replicas: 1, roles: one(IMAGE_A) }));
    const first = await waitConverged(sb, 'rs', { podsPerGroup: 1 });
    const pod = first.pods[0] as V1Pod;
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    // KWOK leaves a Running pod's status alone, so the test plays the kubelet.
    const setStatus = async (ready: boolean, restarts: number) => {
      const now = new Date().toISOString();
      const c = (type: string, ok: boolean) => ({ type, status: ok ? 'True' : 'False', lastTransitionTime: now });
      await kubeRequest(sb.kc, `${objectPath(Resources.pod, sb.namespace, name)}/status`, {
        method: 'PATCH',
        contentType: 'application/merge-patch+json',
        body: {
          status: {
            conditions: [c('PodScheduled', true), c('Initialized', true), c('Ready', ready), c('ContainersReady', ready)],
            containerStatuses: [{ name: 'main', image: IMAGE_A, imageID: '', ready, started: true, restartCount: restarts, state: { running: { startedAt: now } } }],
          },
        },
      });
    };
    const deletions: string[] = [];
    const w = await watchEvents(sb.kc, `/api/v1/namespaces/${sb.namespace}/pods`, { fieldSelector: `metadata.name=${name}` }, (type: string, p: V1Pod) => {
      if (type === 'DELETED' || p.metadata?.deletionTimestamp) deletions.push(p.metadata?.uid ?? '');
    });
    try {
      // It restarted once and is Running and Ready again: remembered for this pod UID.
      await setStatus(true, 1);
      await waitFor('the restart to be remembered', 60_000, async () => {
        const [entry] = await readRoleStatus(sb.redis, sb.prefix, sb.namespace, 'rs');
        return entry?.snapshot.roles['rs-0/main-0']?.restarts?.[uid] === 1;
      }, 250);
      // A readiness blip, no new restart: the reconcile that sees it (status says the group is not
      // available) must not delete the pod.
      await setStatus(false, 1);
      const blip = await waitFor('status to see the blip', 60_000, async () => {
        const ms = await getMs(sb, 'rs');
        return ms?.status?.availableReplicas === 0 ? ms : false;
      }, 250);
      // A Ready ModelServing that lost capacity without a spec change is Degraded, not Starting.
      expect(blip.status?.phase).toBe('Degraded');
      const during = (await listPods(sb, 'rs')).find((p) => p.metadata?.name === name);
      expect(during?.metadata?.uid).toBe(uid);
      expect(deletions).toEqual([]);
      await setStatus(true, 1);
      await waitConverged(sb, 'rs', { podsPerGroup: 1 });
      expect(deletions).toEqual([]);
      // A new crash (restart 2, not ready): the role is recreated (RoleRecreate, grace 0).
      await setStatus(false, 2);
      const replaced = await waitConverged(sb, 'rs', { podsPerGroup: 1, extra: (_m, ps) => ps[0]?.metadata?.uid !== uid });
      expect(replaced.pods[0]?.metadata?.name).toBe(name);
      expect(deletions).toContain(uid);
    } finally {
      w.abort();
    }
  }, 180_000);

  it('scenario 4: a pull refused for credentials is on status in the kubelet words (AuthValid=False), and clears when the pod runs', async () => {
    await createMs(sb, msManifest('ip', sb.namespace, { replicas: 1, roles: one(IMAGE_A) }));
    const { pods } = await waitConverged(sb, 'ip', { podsPerGroup: 1 });
    const name = pods[0]?.metadata?.name ?? '';
    const now = new Date().toISOString();
    const c = (type: string, ok: boolean) => ({ type, status: ok ? 'True' : 'False', lastTransitionTime: now });
    const waitingMessage = 'Back-off pulling image "registry.example.com/private/vllm": pull access denied, repository does not exist or may require authorization';
    // The test plays the kubelet (KWOK leaves a Running pod's status alone).
    await kubeRequest(sb.kc, `${objectPath(Resources.pod, sb.namespace, name)}/status`, {
      method: 'PATCH',
      contentType: 'application/merge-patch+json',
      body: {
        status: {
          conditions: [c('PodScheduled', true), c('Initialized', true), c('Ready', false), c('ContainersReady', false)],
          containerStatuses: [
            { name: 'main', image: IMAGE_A, imageID: '', ready: false, started: false, restartCount: 0, state: { waiting: { reason: 'ImagePullBackOff', message: waitingMessage } } },
          ],
        },
      },
    });
    const shown = await waitFor('status to show the pull problem', 60_000, async () => {
      const ms = await getMs(sb, 'ip');
      return condition(ms, 'AuthValid')?.status === 'False' ? ms : false;
    }, 250);
    expect(shown.status?.phase).toBe('Degraded');
    expect(condition(shown, 'ServingGroupsReady')?.message).toContain(`pod ${name} container main: ImagePullBackOff: ${waitingMessage}`);
    expect(condition(shown, 'ConfigValid')?.status).not.toBe('False');
    // The pod comes up: everything clears.
    await kubeRequest(sb.kc, `${objectPath(Resources.pod, sb.namespace, name)}/status`, {
      method: 'PATCH',
      contentType: 'application/merge-patch+json',
      body: {
        status: {
          conditions: [c('PodScheduled', true), c('Initialized', true), c('Ready', true), c('ContainersReady', true)],
          containerStatuses: [{ name: 'main', image: IMAGE_A, imageID: '', ready: true, started: true, restartCount: 0, state: { running: { startedAt: now } } }],
        },
      },
    });
    const { ms } = await waitConverged(sb, 'ip', { podsPerGroup: 1, extra: (m) => condition(m, 'AuthValid')?.status !== 'False' });
    expect(ms.status?.phase).toBe('Ready');
  });

  it('scenario 8: stacked role updates A -> B -> C keep currentRevision A and rebuild a lost protected instance from A', async () => {
    const roles = (image: string) => [
      { name: 'prefill', replicas: 4, workerReplicas: 0, image, partition: 2, maxUnavailable: 2 },
      { name: 'decode', replicas: 1, workerReplicas: 0, image },
    ];
    await createMs(sb, msManifest('sr', sb.namespace, { replicas: 1, rolloutType: 'RoleRollingUpdate', roles: roles(IMAGE_A) }));
    const a = (await waitConverged(sb, 'sr', { podsPerGroup: 5 })).ms.status?.updateRevision ?? '';
    await patchMs(sb, 'sr', rolesPatch(roles(IMAGE_B)));
    await waitConverged(sb, 'sr', {
      podsPerGroup: 5,
      extra: (_m, ps) => ps.filter((p) => imageOf(p) === IMAGE_B).length === 3,
    });
    // While the controller is down, the template moves on to C and protected instance prefill-0 is lost.
    await ripple?.stop();
    ripple = undefined;
    await patchMs(sb, 'sr', rolesPatch(roles(IMAGE_C)));
    await sb.core.deleteNamespacedPod({ name: 'sr-0-prefill-0-0', namespace: sb.namespace, gracePeriodSeconds: 0 });
    await waitFor('prefill-0 gone', 30_000, async () => !(await listPods(sb, 'sr')).some((p) => p.metadata?.name === 'sr-0-prefill-0-0'));
    // Every status the API server holds from now on is seen: a currentRevision that flipped to B even
    // once would have a next lost protected instance rebuilt from B.
    const seen: string[] = [];
    const watch = await watchEvents(
      sb.kc,
      `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${sb.namespace}/modelservings`,
      { fieldSelector: 'metadata.name=sr' },
      (_type: string, obj: { status?: { currentRevision?: string } }) => seen.push(obj.status?.currentRevision ?? ''),
    );
    ripple = await startRipple(sb, modelServingFunctions());
    const { ms, pods } = await waitConverged(sb, 'sr', {
      podsPerGroup: 5,
      extra: (_m, ps) => ps.filter((p) => imageOf(p) === IMAGE_C).length === 3,
    });
    watch.abort();
    expect(ms.status?.currentRevision).toBe(a);
    expect(seen.length).toBeGreaterThan(1);
    expect([...new Set(seen)]).toEqual([a]);
    const prefill0 = pods.find((p) => p.metadata?.name === 'sr-0-prefill-0-0') as V1Pod;
    expect({ revision: revisionOf(prefill0), image: imageOf(prefill0) }).toEqual({ revision: a, image: IMAGE_A });
    const images = Object.fromEntries(pods.map((p) => [p.metadata?.name, imageOf(p)]));
    expect(images).toEqual({
      'sr-0-prefill-0-0': IMAGE_A,
      'sr-0-prefill-1-0': IMAGE_A,
      'sr-0-prefill-2-0': IMAGE_C,
      'sr-0-prefill-3-0': IMAGE_C,
      'sr-0-decode-0-0': IMAGE_C,
    });
  });

  it('scenario 3: an HPA scaling a 49-character ModelServing 9 -> 10 through /scale keeps it valid; past the limit it degrades, not fails', async () => {
    const name = `hpa-${'a'.repeat(45)}`;
    expect(name).toHaveLength(49);
    const container = { name: 'main', image: IMAGE_A, resources: { requests: { cpu: '10m' } } };
    // A worker template (0 workers) gives each instance its headless Service, whose name is the limit.
    const role = { name: 'prefill', replicas: 1, workerReplicas: 0, entryTemplate: { spec: { containers: [container] } }, workerTemplate: { spec: { containers: [container] } } };
    await createMs(sb, {
      apiVersion: 'workload.serving.volcano.sh/v1alpha1',
      kind: 'ModelServing',
      metadata: { name, namespace: sb.namespace },
      spec: { replicas: 9, template: { roles: [role] } },
    });
    await waitConverged(sb, name, { podsPerGroup: 1, timeoutMs: 120_000 });

    const scale = async (replicas: number) => {
      await kubeRequest(sb.kc, `${objectPath(Resources.modelServing, sb.namespace, name)}/scale`, {
        method: 'PATCH',
        body: { spec: { replicas } },
        contentType: 'application/merge-patch+json',
      });
    };
    // What an HPA does: the scale subresource, no admission webhook, no spec edit by a user.
    await scale(10);
    const settled = async (want: (ms: MsRead) => boolean) =>
      waitFor('the scaled ModelServing to settle', 120_000, async () => {
        const ms = await getMs(sb, name);
        if (!ms?.status || ms.status.observedGeneration !== ms.metadata.generation) return false;
        // An invalid spec is final: stop waiting and let the assertions say so.
        if (condition(ms, 'ConfigValid')?.status === 'False') return ms;
        return want(ms) ? ms : false;
      }, 250);
    const ten = await settled((ms) => ms.status?.availableReplicas === 10 && condition(ms, 'Ready')?.status === 'True');
    expect(condition(ten, 'ConfigValid')?.status).not.toBe('False');
    expect(ten.status).toMatchObject({ phase: 'Ready', replicas: 10, availableReplicas: 10 });
    expect(await listServiceNames(sb, name)).toContain(`${name}-9-prefill-0-0`);

    // Ordinal 10's Service name would be 64 characters: refused on status, the 10 groups keep serving.
    await scale(11);
    const eleven = await settled((ms) => condition(ms, 'ServingGroupsReady')?.reason === 'NameTooLong');
    expect(condition(eleven, 'ConfigValid')?.status).not.toBe('False');
    expect(eleven.status?.phase).toBe('Degraded');
    expect(condition(eleven, 'ServingGroupsReady')?.message).toContain(`"${name}-10-prefill-0-0" would be 64 characters`);
    const pods = await listPods(sb, name);
    expect(pods.filter(isReady)).toHaveLength(10);
    expect(pods.some((p) => ordinal(p) === 10)).toBe(false);

    // Scaled back, it is Ready again: nothing was terminal.
    await scale(10);
    const back = await settled((ms) => condition(ms, 'Ready')?.status === 'True');
    expect(back.status).toMatchObject({ phase: 'Ready', availableReplicas: 10 });
  });
});

describe('ModelServing in a namespace being deleted (issue 13 scenario 10)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple | undefined;
  const policy = `ripple-test-hold-ms-${Date.now().toString(36)}`;
  const admission = '/apis/admissionregistration.k8s.io/v1';
  /** Every reconcile of the ModelServing, in order: whether it threw, and why. */
  const outcomes: Array<{ at: number; error?: string }> = [];

  const observed = (defs: FunctionDefinition[]): FunctionDefinition[] =>
    defs.map((d) =>
      d.name !== RECONCILE_MODELSERVING
        ? d
        : {
            ...d,
            reconcile: async (req, ctx) => {
              try {
                const r = await d.reconcile(req, ctx);
                outcomes.push({ at: Date.now() });
                return r;
              } catch (err) {
                outcomes.push({ at: Date.now(), error: err instanceof Error ? err.message : String(err) });
                throw err;
              }
            },
          },
    );

  beforeAll(async () => {
    sb = await openSandbox('ms-nsdel');
    // A short resync, so the ModelServing is reconciled often while its namespace goes.
    const env = { ...process.env, MODELSERVING_RESYNC_MS: '1000' };
    ripple = await startRipple(sb, observed([modelServingDefinition(env), emitEventsDefinition()]), { env });
    await ripple.host.scheduleResyncs();
  });
  afterAll(async () => {
    await ripple?.stop();
    for (const path of [`${admission}/validatingadmissionpolicybindings/${policy}`, `${admission}/validatingadmissionpolicies/${policy}`]) {
      await kubeRequest(sb.kc, path, { method: 'DELETE' }).catch(() => undefined);
    }
    await sb?.cleanup();
  });

  it('stops creating children once the namespace refuses them, without errors or retries, while the ModelServing lives on', async () => {
    await createMs(sb, msManifest('ns', sb.namespace, { replicas: 2, roles: one(IMAGE_A) }));
    await waitConverged(sb, 'ns', { podsPerGroup: 1 });

    // The namespace controller deletes pods and ModelServings in an order of its own; to see the window
    // where the pods are gone and the ModelServing is not, an admission policy keeps the ModelServing.
    await kubeRequest(sb.kc, `${admission}/validatingadmissionpolicies`, {
      method: 'POST',
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: policy },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [{ apiGroups: ['workload.serving.volcano.sh'], apiVersions: ['*'], operations: ['DELETE'], resources: ['modelservings'] }],
          },
          validations: [{ expression: 'false', message: 'held by the test while its namespace terminates' }],
        },
      },
    });
    await kubeRequest(sb.kc, `${admission}/validatingadmissionpolicybindings`, {
      method: 'POST',
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: policy },
        spec: {
          policyName: policy,
          validationActions: ['Deny'],
          matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': sb.namespace } } },
        },
      },
    });
    // Policies take effect asynchronously: a dry-run delete says when.
    await waitFor('the policy to hold the ModelServing', 60_000, async () => {
      try {
        await kubeRequest(sb.kc, objectPath(Resources.modelServing, sb.namespace, 'ns'), { method: 'DELETE', query: { dryRun: 'All' } });
        return false;
      } catch (err) {
        return isStatus(err, 403) || isStatus(err, 422) || isStatus(err, 400);
      }
    }, 500);

    await sb.core.deleteNamespace({ name: sb.namespace });
    await waitFor('the namespace controller to remove the pods', 120_000, async () => (await listPods(sb, 'ns')).length === 0, 250);
    const goneAt = Date.now();
    // Reconciles go on (the resync every second, and the pod deletions' own events).
    await waitFor('five reconciles after the pods are gone', 120_000, async () => outcomes.filter((o) => o.at > goneAt).length >= 5, 250);
    expect((await mustGetMs(sb, 'ns')).metadata.name).toBe('ns');
    const failed = outcomes.filter((o) => o.error !== undefined).map((o) => o.error);
    expect(failed).toEqual([]);
    expect(await listPods(sb, 'ns')).toEqual([]);
  });
});

describe('ModelServing whose pods a ResourceQuota refuses (issue 13 scenario 4, API refusals)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple | undefined;

  beforeAll(async () => {
    sb = await openSandbox('ms-quota');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('says on status that the quota refused a pod, in the API server words, and converges once the quota is raised', async () => {
    const quota = (pods: string) => ({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'pods' }, spec: { hard: { pods } } });
    const quotaPath = `/api/v1/namespaces/${sb.namespace}/resourcequotas`;
    await kubeRequest(sb.kc, quotaPath, { method: 'POST', body: quota('1') });
    // Admission counts against the quota's status, which the quota controller fills in.
    await waitFor('the quota to be counted', 60_000, async () => {
      const q = (await kubeRequest(sb.kc, `${quotaPath}/pods`)) as { status?: { hard?: { pods?: string } } };
      return q.status?.hard?.pods === '1';
    }, 250);
    await createMs(sb, msManifest('q', sb.namespace, { replicas: 2, roles: one(IMAGE_A) }));
    const refused = await waitFor('status to say the quota refused a pod', 60_000, async () => {
      const ms = await getMs(sb, 'q');
      return condition(ms, 'Ready')?.reason === 'InsufficientCapacity' ? ms : false;
    }, 250);
    expect(refused.status?.phase).toBe('Starting');
    expect(condition(refused, 'Ready')?.message).toMatch(/the API server refused pod q-[01]-main-0-0: .*exceeded quota: pods/);
    expect(condition(refused, 'ConfigValid')?.status).not.toBe('False');

    await kubeRequest(sb.kc, `${quotaPath}/pods`, { method: 'PATCH', body: { spec: { hard: { pods: '2' } } }, contentType: 'application/merge-patch+json' });
    const { ms } = await waitConverged(sb, 'q', { podsPerGroup: 1, timeoutMs: 100_000 });
    expect(condition(ms, 'Ready')?.status).toBe('True');
  }, 180_000);
});
