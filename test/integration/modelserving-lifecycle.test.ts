// ModelServing end to end on the sandbox (real API server, KWOK nodes, real Redis, Ripple's watcher
// and workers): create → converge → image change → every pod updated → scale groups and roles →
// delete → everything gone. Also what users read: Kthena's status, the unified Ready condition
// (`kubectl wait`), and the role Events (`kubectl get events`). Steps share one ModelServing.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRoleStatus } from '../../functions/reconcile-modelserving/role-store.js';
import { modelServingRoleStatusReader } from '../../functions/reconcile-modelserving/role-status-reader.js';
import { kubeRequest } from '../../kube/raw.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  IMAGE_A,
  IMAGE_B,
  condition,
  createMs,
  deleteMs,
  getMs,
  groupOf,
  imageOf,
  kubectlPath,
  listPods,
  listServiceNames,
  liveNames,
  modelServingFunctions,
  msManifest,
  patchMs,
  revisionOf,
  rolesPatch,
  waitConverged,
  type RoleOptions,
} from '../fixtures/modelserving-fixtures.js';

const run = promisify(execFile);
const NAME = 'llm';
// prefill: one entry + one worker (so a headless Service); decode: entry only.
const roles = (image: string, prefillReplicas = 1): RoleOptions[] => [
  { name: 'prefill', replicas: prefillReplicas, workerReplicas: 1, image },
  { name: 'decode', replicas: 1, workerReplicas: 0, image },
];

describe('ModelServing lifecycle', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  const kubectl = (...args: string[]) => run(kubectlPath(), ['--kubeconfig', inject('kubeconfig'), '-n', sb.namespace, ...args]);

  beforeAll(async () => {
    sb = await openSandbox('ms-life');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('creates ServingGroups, roles, pods, Services and a ControllerRevision with Kthena names, labels and env', async () => {
    await createMs(sb, msManifest(NAME, sb.namespace, { replicas: 2, roles: roles(IMAGE_A) }));
    // A user's `kubectl wait`, started before anything is ready, returns once it converged.
    const waiting = kubectl('wait', '--for=condition=Ready', `modelserving/${NAME}`, '--timeout=90s');
    const { ms, pods } = await waitConverged(sb, NAME, { podsPerGroup: 3 });
    expect((await waiting).stdout).toContain('condition met');
    expect(liveNames(pods)).toEqual([
      'llm-0-decode-0-0',
      'llm-0-prefill-0-0',
      'llm-0-prefill-0-1',
      'llm-1-decode-0-0',
      'llm-1-prefill-0-0',
      'llm-1-prefill-0-1',
    ]);
    const entry = pods.find((p) => p.metadata?.name === 'llm-1-prefill-0-0');
    expect(entry?.metadata?.labels).toMatchObject({
      'modelserving.volcano.sh/name': NAME,
      'modelserving.volcano.sh/group-name': 'llm-1',
      'modelserving.volcano.sh/role': 'prefill',
      'modelserving.volcano.sh/role-id': 'prefill-0',
      'modelserving.volcano.sh/entry': 'true',
      'modelserving.volcano.sh/revision': ms.status?.updateRevision,
    });
    const worker = pods.find((p) => p.metadata?.name === 'llm-1-prefill-0-1');
    expect(worker?.metadata?.labels?.['modelserving.volcano.sh/entry']).toBeUndefined();
    expect(worker?.spec?.containers[0]?.env).toEqual(
      expect.arrayContaining([
        { name: 'GROUP_SIZE', value: '2' },
        { name: 'ENTRY_ADDRESS', value: `llm-1-prefill-0-0.${sb.namespace}` },
        { name: 'WORKER_INDEX', value: '1' },
      ]),
    );
    expect(entry?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'ModelServing', name: NAME, uid: ms.metadata.uid, controller: true });
    // Headless Services only for the role with workers.
    expect(await listServiceNames(sb, NAME)).toEqual(['llm-0-prefill-0-0', 'llm-1-prefill-0-0']);
    const revs = await sb.kc.makeApiClient(AppsV1Api).listNamespacedControllerRevision({ namespace: sb.namespace, labelSelector: `modelserving.volcano.sh/name=${NAME}` });
    expect(revs.items.map((r) => r.metadata?.name)).toEqual([`llm-${ms.status?.updateRevision}`]);
    expect(ms.status).toMatchObject({
      replicas: 2,
      availableReplicas: 2,
      updatedReplicas: 2,
      currentReplicas: 2,
      currentRevision: ms.status?.updateRevision,
      phase: 'Ready',
      labelSelector:
        'modelserving.volcano.sh/entry=true,modelserving.volcano.sh/name=llm,modelserving.volcano.sh/role=prefill,modelserving.volcano.sh/role-id=prefill-0',
    });
    expect(condition(ms, 'Available')).toMatchObject({ status: 'True', reason: 'AllGroupsReady' });
    expect(condition(ms, 'Ready')?.status).toBe('True');
    expect(condition(ms, 'ConfigValid')?.status).toBe('True');
    expect(condition(ms, 'ServingGroupsReady')?.status).toBe('True');
  });

  it('reads as converged to kubectl wait and kstatus tools, and the scale subresource counts ServingGroups', async () => {
    const { stdout } = await kubectl('wait', '--for=condition=Ready', `modelserving/${NAME}`, '--timeout=30s');
    expect(stdout).toContain('condition met');
    const ms = await getMs(sb, NAME);
    // kstatus: Current = observedGeneration matches, Ready True, Stalled False.
    expect(ms?.status?.observedGeneration).toBe(ms?.metadata.generation);
    expect(condition(ms, 'Stalled')?.status).toBe('False');
    const scale = await kubectl('get', '--raw', `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${sb.namespace}/modelservings/${NAME}/scale`);
    expect(JSON.parse(scale.stdout)).toMatchObject({ spec: { replicas: 2 }, status: { replicas: 2 } });
  });

  it('keeps the role datastore in Redis: every role Running', async () => {
    const [entry] = await readRoleStatus(sb.redis, sb.prefix, sb.namespace, NAME);
    expect(Object.values(entry?.snapshot.roles ?? {}).map((r) => `${r.group}/${r.roleId}=${r.state}`).sort()).toEqual([
      'llm-0/decode-0=Running',
      'llm-0/prefill-0=Running',
      'llm-1/decode-0=Running',
      'llm-1/prefill-0=Running',
    ]);
    expect(Object.values(entry?.snapshot.groups ?? {}).map((g) => g.state)).toEqual(['Running', 'Running']);
    // The ops server's dump (this function's reader) sees it.
    const [typed] = await modelServingRoleStatusReader(sb.redis, sb.prefix).get(sb.namespace, NAME);
    expect(typed).toMatchObject({ key: `${sb.namespace}/${NAME}`, value: { uid: entry?.uid, roles: entry?.snapshot.roles } });
    const listed = await modelServingRoleStatusReader(sb.redis, sb.prefix).list({ namespace: sb.namespace });
    expect(listed.entries.map((e) => e.key)).toEqual([`${sb.namespace}/${NAME}`]);
  });

  it('shows RoleCreating then RoleRunning for each role in kubectl get events', async () => {
    const events = await waitFor('RoleRunning events for all four roles', 30_000, async () => {
      const { stdout } = await kubectl('get', 'events', '--field-selector', `involvedObject.name=${NAME}`, '-o', 'json');
      const items = (JSON.parse(stdout) as { items: Array<{ reason: string; message: string; type: string; source?: { component?: string }; firstTimestamp?: string; eventTime?: string }> }).items;
      return items.filter((e) => e.reason === 'RoleRunning').length >= 4 ? items : false;
    });
    for (const group of ['llm-0', 'llm-1']) {
      for (const role of ['prefill/prefill-0', 'decode/decode-0']) {
        const creating = events.find((e) => e.reason === 'RoleCreating' && e.message === `Role ${role} in ServingGroup ${group} is now Creating`);
        const running = events.find((e) => e.reason === 'RoleRunning' && e.message === `Role ${role} in ServingGroup ${group} is now Running`);
        expect(creating?.type).toBe('Normal');
        expect(running?.type).toBe('Normal');
        expect(creating?.source?.component).toBe('modelserving-controller');
        expect(Date.parse(creating?.firstTimestamp ?? creating?.eventTime ?? '')).toBeLessThanOrEqual(Date.parse(running?.firstTimestamp ?? running?.eventTime ?? ''));
      }
    }
  });

  it('rolls every pod to a new image, and the revision becomes current', async () => {
    const before = await getMs(sb, NAME);
    await patchMs(sb, NAME, rolesPatch(roles(IMAGE_B)));
    const { ms, pods } = await waitConverged(sb, NAME, {
      podsPerGroup: 3,
      extra: (m, ps) => ps.every((p) => imageOf(p) === IMAGE_B && revisionOf(p) === m.status?.updateRevision),
    });
    expect(ms.status?.updateRevision).not.toBe(before?.status?.updateRevision);
    expect(ms.status).toMatchObject({ currentRevision: ms.status?.updateRevision, updatedReplicas: 2, currentReplicas: 2, availableReplicas: 2 });
    expect(liveNames(pods)).toHaveLength(6);
    // The old revision's ControllerRevision stays as history (revisionHistoryLimit, default 10: rollback), numbered below the new one.
    const revs = await sb.kc.makeApiClient(AppsV1Api).listNamespacedControllerRevision({ namespace: sb.namespace, labelSelector: `modelserving.volcano.sh/name=${NAME}` });
    expect(Object.fromEntries(revs.items.map((r) => [r.metadata?.name, r.revision]))).toEqual({
      [`llm-${before?.status?.updateRevision}`]: 1,
      [`llm-${ms.status?.updateRevision}`]: 2,
    });
  });

  it('scales ServingGroups up and down (highest ordinals go first) with their Services', async () => {
    await patchMs(sb, NAME, { spec: { replicas: 3 } });
    let { pods } = await waitConverged(sb, NAME, { podsPerGroup: 3 });
    expect([...new Set(pods.map(groupOf))].sort()).toEqual(['llm-0', 'llm-1', 'llm-2']);
    expect(await listServiceNames(sb, NAME)).toEqual(['llm-0-prefill-0-0', 'llm-1-prefill-0-0', 'llm-2-prefill-0-0']);
    await patchMs(sb, NAME, { spec: { replicas: 1 } });
    ({ pods } = await waitConverged(sb, NAME, { podsPerGroup: 3 }));
    expect([...new Set(pods.map(groupOf))]).toEqual(['llm-0']);
    await waitFor('Services of removed groups deleted', 20_000, async () => (await listServiceNames(sb, NAME)).join() === 'llm-0-prefill-0-0');
  });

  it('scales role instances up and down inside each group, leaving the other role alone', async () => {
    const decodeUid = (await listPods(sb, NAME)).find((p) => p.metadata?.name === 'llm-0-decode-0-0')?.metadata?.uid;
    await patchMs(sb, NAME, rolesPatch(roles(IMAGE_B, 2)));
    let { pods } = await waitConverged(sb, NAME, { podsPerGroup: 5 });
    expect(liveNames(pods)).toEqual(['llm-0-decode-0-0', 'llm-0-prefill-0-0', 'llm-0-prefill-0-1', 'llm-0-prefill-1-0', 'llm-0-prefill-1-1']);
    expect(await listServiceNames(sb, NAME)).toEqual(['llm-0-prefill-0-0', 'llm-0-prefill-1-0']);
    await patchMs(sb, NAME, rolesPatch(roles(IMAGE_B, 1)));
    ({ pods } = await waitConverged(sb, NAME, { podsPerGroup: 3 }));
    expect(liveNames(pods)).toEqual(['llm-0-decode-0-0', 'llm-0-prefill-0-0', 'llm-0-prefill-0-1']);
    expect(pods.find((p) => p.metadata?.name === 'llm-0-decode-0-0')?.metadata?.uid).toBe(decodeUid);
  });

  it('a Running role whose pod fails falls back to Creating with a Warning, and is recreated (RoleRecreate)', async () => {
    const failed = (await listPods(sb, NAME)).find((p) => p.metadata?.name === 'llm-0-decode-0-0');
    await kubeRequest(sb.kc, `/api/v1/namespaces/${sb.namespace}/pods/llm-0-decode-0-0/status`, {
      method: 'PATCH',
      body: { status: { phase: 'Failed' } },
      contentType: 'application/merge-patch+json',
    });
    await waitConverged(sb, NAME, {
      podsPerGroup: 3,
      extra: (_m, ps) => ps.some((p) => p.metadata?.name === 'llm-0-decode-0-0' && p.metadata.uid !== failed?.metadata?.uid),
    });
    const events = await waitFor('the Warning and the recovery events', 30_000, async () => {
      const { stdout } = await kubectl('get', 'events', '--field-selector', `involvedObject.name=${NAME}`, '-o', 'json');
      const items = (JSON.parse(stdout) as { items: Array<{ reason: string; message: string; type: string; count?: number }> }).items;
      const mine = items.filter((e) => e.message.startsWith('Role decode/decode-0 in ServingGroup llm-0'));
      return mine.some((e) => e.type === 'Warning') && mine.some((e) => e.reason === 'RoleDeleting') ? mine : false;
    });
    expect(events.find((e) => e.type === 'Warning')).toMatchObject({ reason: 'RoleCreating', message: 'Role decode/decode-0 in ServingGroup llm-0 is now Creating' });
    expect(events.find((e) => e.reason === 'RoleDeleting')?.type).toBe('Normal');
  });

  it('deletes: pods, Services and ControllerRevisions go with their owner, and the datastore entry too', async () => {
    await deleteMs(sb, NAME);
    await waitFor('every child gone', 60_000, async () => {
      const revs = await sb.kc.makeApiClient(AppsV1Api).listNamespacedControllerRevision({ namespace: sb.namespace, labelSelector: `modelserving.volcano.sh/name=${NAME}` });
      return (await listPods(sb, NAME)).length === 0 && (await listServiceNames(sb, NAME)).length === 0 && revs.items.length === 0;
    });
    await waitFor('role datastore entry removed', 20_000, async () => (await readRoleStatus(sb.redis, sb.prefix, sb.namespace, NAME)).length === 0);
    expect(await getMs(sb, NAME)).toBeUndefined();
  });
});
