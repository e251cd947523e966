// A worker process SIGKILLed while it is creating a ModelServing's ServingGroups: another worker
// takes the key over (at-least-once) and the result is exact — every expected pod and Service once,
// nothing extra, status and the role datastore converged — because every create is deterministic by
// name and create-if-absent.
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { readRoleStatus } from '../../functions/reconcile-modelserving/role-store.js';
import { startProcess, stopProcess } from '../harness/processes.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  createMs,
  listPods,
  listServiceNames,
  liveNames,
  modelServingFunctions,
  msManifest,
  waitConverged,
} from '../fixtures/modelserving-fixtures.js';

const WORKER = 'test/fixtures/function-worker.ts';
const GROUPS = 12;
const WORKERS_PER_INSTANCE = 4; // 5 pods per group: 60 pods and 12 Services in all

describe('ModelServing: a worker killed mid-creation', () => {
  let sb: TestSandbox;
  let watcher: RunningRipple;
  const children: ChildProcess[] = [];
  const env = (extra: Record<string, string> = {}) => ({
    KUBECONFIG_PATH: inject('kubeconfig'),
    REDIS_URL: sb.redisUrl,
    PREFIX: sb.prefix,
    FUNCTIONS: 'reconcile-modelserving,emit-events',
    NAMESPACE: sb.namespace,
    LOCK_MS: '3000',
    STALLED_MS: '1000',
    ...extra,
  });

  beforeAll(async () => {
    sb = await openSandbox('ms-crash');
    // This process only watches and enqueues; the reconciles run in the child workers.
    watcher = await startRipple(sb, modelServingFunctions(), { workers: false });
  });
  afterAll(async () => {
    for (const c of children.splice(0)) await stopProcess(c, 'SIGKILL');
    await watcher?.stop();
    await sb?.cleanup();
  });

  it('another worker finishes the job and the ServingGroups are exactly right', async () => {
    // One request at a time, so the victim is surely caught half-way through its creates.
    const victim = await startProcess(WORKER, env({ MODELSERVING_APPLY_CONCURRENCY: '1' }));
    children.push(victim);
    await createMs(
      sb,
      msManifest('crash', sb.namespace, { replicas: GROUPS, roles: [{ name: 'main', replicas: 1, workerReplicas: WORKERS_PER_INSTANCE }] }),
    );
    const atKill = await waitFor('the victim to have created a few pods', 60_000, async () => {
      const n = (await listPods(sb, 'crash')).length;
      return n >= 4 ? n : false;
    }, 10);
    await stopProcess(victim, 'SIGKILL');
    const afterKill = (await listPods(sb, 'crash')).length;
    expect(afterKill).toBeLessThan(GROUPS * (1 + WORKERS_PER_INSTANCE));

    children.push(await startProcess(WORKER, env()));
    const { ms, pods } = await waitConverged(sb, 'crash', { podsPerGroup: 1 + WORKERS_PER_INSTANCE, timeoutMs: 120_000 });

    const expected: string[] = [];
    for (let g = 0; g < GROUPS; g++) for (let i = 0; i <= WORKERS_PER_INSTANCE; i++) expected.push(`crash-${g}-main-0-${i}`);
    expect(liveNames(pods)).toEqual(expected.sort());
    expect(pods).toHaveLength(expected.length);
    expect(await listServiceNames(sb, 'crash')).toEqual(Array.from({ length: GROUPS }, (_, g) => `crash-${g}-main-0-0`).sort());
    expect(ms.status).toMatchObject({ replicas: GROUPS, availableReplicas: GROUPS, updatedReplicas: GROUPS, phase: 'Ready' });
    const [entry] = await waitFor('role datastore converged', 20_000, async () => {
      const s = await readRoleStatus(sb.redis, sb.prefix, sb.namespace, 'crash');
      const roles = Object.values(s[0]?.snapshot.roles ?? {});
      return roles.length === GROUPS && roles.every((r) => r.state === 'Running') ? s : false;
    });
    expect(Object.keys(entry?.snapshot.groups ?? {})).toHaveLength(GROUPS);
    console.error(`modelserving-crash: victim killed with ${atKill}..${afterKill} of ${expected.length} pods created`);
  });
});
