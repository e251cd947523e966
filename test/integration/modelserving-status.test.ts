// Issue 13 on the sandbox, what status and Events tell a user:
//  - scenario 4's progress deadline: a rollout whose pods never become Ready ends in
//    Progressing=False/ProgressDeadlineExceeded (Degraded, Stalled) naming the stuck groups, and
//    progress (one of them comes up) resets the clock;
//  - scenario 5: routine scaling through /scale and rollouts emit Normal Events only, watched Event by
//    Event, and a real role problem on the busy object still gets its Warning;
//  - the per-role summary (`status.roles`) as `kubectl get -o yaml` shows it;
//  - `kubectl describe` of a ModelServing a quota refuses after a routine scale;
//  - item 9: the per-object event request list is capped.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { makeReconcile } from '../../functions/emit-events/handler.js';
import { definition as emitEventsDefinition } from '../../functions/emit-events/definition.js';
import { definition as modelServingDefinition } from '../../functions/reconcile-modelserving/definition.js';
import { PROGRESS_DEADLINE_ANNOTATION } from '../../functions/reconcile-modelserving/plan/status-deadline.js';
import { EMIT_EVENTS, MAX_PENDING_EVENT_REQUESTS, queueEventSink } from '../../runtime/event-sink.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { objectListKey, waitSettled } from '../fixtures/emit-events-cluster.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { watchEvents as watchApi } from '../harness/watch-events.js';
import {
  IMAGE_A,
  IMAGE_B,
  IMAGE_C,
  condition,
  createMs,
  getMs,
  imageOf,
  kubectlPath,
  listPods,
  msManifest,
  patchMs,
  waitConverged,
  type RoleOptions,
} from '../fixtures/modelserving-fixtures.js';

const run = promisify(execFile);
const one = (image: string): RoleOptions[] => [{ name: 'main', replicas: 1, workerReplicas: 0, image }];

interface SeenEvent {
  name: string;
  type: string;
  reason: string;
  message: string;
  count: number;
}

/**
 * Every Event about one object as the API server accepts it (a watch from a fresh list's
 * resourceVersion: nothing written after `start` is missed), keyed by Event name (a count patch
 * replaces its entry).
 */
async function watchEvents(sb: TestSandbox, objectName: string): Promise<{ seen: Map<string, SeenEvent>; stop(): void }> {
  const path = `/api/v1/namespaces/${sb.namespace}/events`;
  const fieldSelector = `involvedObject.name=${objectName}`;
  const list = z.object({ metadata: z.object({ resourceVersion: z.string() }) }).parse(await kubeRequest(sb.kc, path, { query: { fieldSelector } }));
  const seen = new Map<string, SeenEvent>();
  const eventSchema = z.object({ metadata: z.object({ name: z.string() }), type: z.string(), reason: z.string(), message: z.string(), count: z.number().optional() });
  const req = await watchApi(sb.kc, path, { fieldSelector, resourceVersion: list.metadata.resourceVersion }, (phase: string, obj: unknown) => {
    if (phase !== 'ADDED' && phase !== 'MODIFIED') return;
    const e = eventSchema.parse(obj);
    seen.set(e.metadata.name, { name: e.metadata.name, type: e.type, reason: e.reason, message: e.message, count: e.count ?? 1 });
  });
  return { seen, stop: () => req.abort() };
}

async function scale(sb: TestSandbox, name: string, replicas: number): Promise<void> {
  // What an HPA does: the scale subresource, no spec edit by a user.
  await kubeRequest(sb.kc, `${objectPath(Resources.modelServing, sb.namespace, name)}/scale`, {
    method: 'PATCH',
    body: { spec: { replicas } },
    contentType: 'application/merge-patch+json',
  });
}

function imagePatch(image: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    spec: {
      template: {
        roles: [{ name: 'main', replicas: 1, workerReplicas: 0, entryTemplate: { spec: { ...extra, containers: [{ name: 'main', image, resources: { requests: { cpu: '10m' } } }] } } }],
      },
    },
  };
}

/** Binds a pod no scheduler will place to a KWOK node, as a scheduler would; KWOK then runs it. */
async function bind(sb: TestSandbox, pod: string): Promise<void> {
  const nodes = await sb.core.listNode({ labelSelector: 'type=kwok' });
  const node = nodes.items[0]?.metadata?.name ?? (await sb.core.listNode()).items[0]?.metadata?.name ?? '';
  await kubeRequest(sb.kc, `${objectPath(Resources.pod, sb.namespace, pod)}/binding`, {
    method: 'POST',
    body: { apiVersion: 'v1', kind: 'Binding', metadata: { name: pod }, target: { apiVersion: 'v1', kind: 'Node', name: node } },
  });
}

const statusRolesSchema = z.array(
  z.looseObject({ name: z.string(), replicas: z.number(), readyReplicas: z.number(), updatedReplicas: z.number(), templateHash: z.string().optional(), notReady: z.array(z.string()).optional() }),
);

describe('ModelServing status and Events (issue 13 scenarios 4 and 5)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple | undefined;
  const kubectl = (...args: string[]) => run(kubectlPath(), ['--kubeconfig', inject('kubeconfig'), '-n', sb.namespace, ...args]);

  beforeAll(async () => {
    sb = await openSandbox('ms-status');
    // A small spam burst (client-go's is 25) so that a busy object is a few operations away: before
    // issue 13, each routine scale or rollout spent two of the Warning bucket's tokens.
    const emitEvents = { ...emitEventsDefinition(), reconcile: makeReconcile({ correlator: { spamBurst: 6 } }) };
    ripple = await startRipple(sb, [modelServingDefinition(), emitEvents]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('scenario 4: a rollout whose pods never become Ready ends in ProgressDeadlineExceeded naming the stuck groups; progress resets the clock', async () => {
    const name = 'dl';
    await createMs(sb, msManifest(name, sb.namespace, { replicas: 2, maxUnavailable: 2, roles: one(IMAGE_A), annotations: { [PROGRESS_DEADLINE_ANNOTATION]: '15' } }));
    await waitConverged(sb, name, { podsPerGroup: 1 });
    const events = await watchEvents(sb, name);
    try {
      // The new template asks for a node that does not exist: its pods stay Pending (Unschedulable).
      await patchMs(sb, name, imagePatch(IMAGE_B, { nodeSelector: { 'ripple.dev/no-such-node': sb.namespace } }));
      const stuck = await waitFor('the rollout to pass its progress deadline', 90_000, async () => {
        const ms = await getMs(sb, name);
        return condition(ms, 'Progressing')?.reason === 'ProgressDeadlineExceeded' ? ms : false;
      }, 250);
      expect(condition(stuck, 'Progressing')?.status).toBe('False');
      expect(condition(stuck, 'Progressing')?.message).toMatch(/dl-0.*dl-1/);
      expect(stuck.status?.phase).toBe('Degraded');
      expect(condition(stuck, 'Ready')).toMatchObject({ status: 'False', reason: 'ProgressDeadlineExceeded' });
      expect(condition(stuck, 'Stalled')).toMatchObject({ status: 'True', reason: 'ProgressDeadlineExceeded' });
      expect(condition(stuck, 'ServingGroupsReady')?.message).toMatch(/no progress for 15s/);
      await waitFor('a ProgressDeadlineExceeded Warning', 30_000, async () =>
        [...events.seen.values()].some((e) => e.type === 'Warning' && e.reason === 'ProgressDeadlineExceeded' && /dl-0/.test(e.message)),
      );

      // Group 0's pod is placed and comes up: progress; the clock starts again, and the deadline
      // passes once more with only group 1 stuck.
      await bind(sb, 'dl-0-main-0-0');
      const progressed = await waitFor('progress to clear the deadline', 60_000, async () => {
        const ms = await getMs(sb, name);
        return ms?.status?.availableReplicas === 1 && condition(ms, 'Progressing')?.reason !== 'ProgressDeadlineExceeded' ? ms : false;
      }, 250);
      expect(progressed.status?.phase).not.toBe('Degraded');
      expect(condition(progressed, 'Stalled')?.status).toBe('False');
      const again = await waitFor('the deadline to pass again for group 1 alone', 90_000, async () => {
        const ms = await getMs(sb, name);
        return condition(ms, 'Progressing')?.reason === 'ProgressDeadlineExceeded' ? ms : false;
      }, 250);
      const message = condition(again, 'Progressing')?.message ?? '';
      expect(message).toContain('dl-1');
      expect(message).not.toContain('dl-0');

      await bind(sb, 'dl-1-main-0-0');
      const done = await waitConverged(sb, name, { podsPerGroup: 1, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_B) });
      expect(done.ms.status?.phase).toBe('Ready');
      expect(condition(done.ms, 'Stalled')?.status).toBe('False');
    } finally {
      events.stop();
    }
  }, 300_000);

  it('scenario 5: scaling through /scale and rollouts emit Normal Events only; a real role problem on the busy object still gets its Warning', async () => {
    const name = 'rt';
    await createMs(sb, msManifest(name, sb.namespace, { replicas: 1, roles: one(IMAGE_A) }));
    await waitConverged(sb, name, { podsPerGroup: 1 });
    const events = await watchEvents(sb, name);
    const list = objectListKey(sb.prefix, { namespace: sb.namespace, kind: 'ModelServing', name });
    try {
      await scale(sb, name, 3);
      await waitConverged(sb, name, { podsPerGroup: 1 });
      await patchMs(sb, name, imagePatch(IMAGE_B));
      await waitConverged(sb, name, { podsPerGroup: 1, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_B) });
      await scale(sb, name, 2);
      await waitConverged(sb, name, { podsPerGroup: 1 });
      await patchMs(sb, name, imagePatch(IMAGE_C));
      await waitConverged(sb, name, { podsPerGroup: 1, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_C) });
      // Everything the reconciles emitted has been written (or spam-filtered: the Normal bucket runs
      // dry, which is the point of a busy object) by now.
      await waitSettled(sb.redis, sb.prefix, [list]);
      const routine = [...events.seen.values()];
      expect(routine.filter((e) => e.type === 'Warning')).toEqual([]);
      expect(routine.filter((e) => e.type === 'Normal').length).toBeGreaterThan(0);

      // A real problem: group 0's pod fails. Its role falls back with a Warning, on an object whose
      // Normal bucket routine work has long emptied.
      const pod = (await listPods(sb, name)).find((p: V1Pod) => p.metadata?.name === 'rt-0-main-0-0');
      await kubeRequest(sb.kc, `${objectPath(Resources.pod, sb.namespace, 'rt-0-main-0-0')}/status`, {
        method: 'PATCH',
        body: { status: { phase: 'Failed' } },
        contentType: 'application/merge-patch+json',
      });
      await waitConverged(sb, name, { podsPerGroup: 1, extra: (_m, ps) => ps.some((p) => p.metadata?.name === 'rt-0-main-0-0' && p.metadata.uid !== pod?.metadata?.uid) });
      const warning = await waitFor('the role Warning', 30_000, async () =>
        [...events.seen.values()].find((e) => e.type === 'Warning' && e.reason === 'RoleCreating'),
      );
      expect(warning.message).toBe('Role main/main-0 in ServingGroup rt-0 is now Creating');
    } finally {
      events.stop();
    }
  }, 300_000);

  it('shows each role on status.roles (kubectl get -o yaml): replicas, ready, updated, template hash', async () => {
    const name = 'sr';
    const roles: RoleOptions[] = [
      { name: 'prefill', replicas: 2, workerReplicas: 1, image: IMAGE_A },
      { name: 'decode', replicas: 1, workerReplicas: 0, image: IMAGE_A },
    ];
    await createMs(sb, msManifest(name, sb.namespace, { replicas: 2, roles }));
    await waitConverged(sb, name, { podsPerGroup: 5 });
    const { stdout } = await kubectl('get', 'modelserving', name, '-o', 'yaml');
    expect(stdout).toMatch(/roles:\n\s+- name: prefill/);
    const read = z.object({ status: z.object({ roles: statusRolesSchema }) }).parse(JSON.parse((await kubectl('get', 'modelserving', name, '-o', 'json')).stdout));
    expect(read.status.roles.map((r) => ({ name: r.name, replicas: r.replicas, readyReplicas: r.readyReplicas, updatedReplicas: r.updatedReplicas }))).toEqual([
      { name: 'prefill', replicas: 4, readyReplicas: 4, updatedReplicas: 4 },
      { name: 'decode', replicas: 2, readyReplicas: 2, updatedReplicas: 2 },
    ]);
    const pods = await listPods(sb, name);
    const hashOf = (role: string) => pods.find((p) => p.metadata?.labels?.['modelserving.volcano.sh/role'] === role)?.metadata?.labels?.['modelserving.volcano.sh/role-template-hash'];
    expect(read.status.roles.map((r) => r.templateHash)).toEqual([hashOf('prefill'), hashOf('decode')]);
    expect(read.status.roles.every((r) => r.notReady === undefined)).toBe(true);

    // One decode pod stops being ready (the test plays the kubelet; no restart, so nothing is
    // recreated): its instance is named until it is ready again.
    const setReady = async (ready: boolean) => {
      const now = new Date().toISOString();
      const c = (type: string, ok: boolean) => ({ type, status: ok ? 'True' : 'False', lastTransitionTime: now });
      await kubeRequest(sb.kc, `${objectPath(Resources.pod, sb.namespace, 'sr-1-decode-0-0')}/status`, {
        method: 'PATCH',
        contentType: 'application/merge-patch+json',
        body: {
          status: {
            conditions: [c('PodScheduled', true), c('Initialized', true), c('Ready', ready), c('ContainersReady', ready)],
            containerStatuses: [{ name: 'main', image: IMAGE_A, imageID: '', ready, started: true, restartCount: 0, state: { running: { startedAt: now } } }],
          },
        },
      });
    };
    const decodeOf = async () => {
      const ms = await getMs(sb, name);
      const parsed = statusRolesSchema.safeParse((ms?.status as Record<string, unknown> | undefined)?.roles);
      return parsed.success ? parsed.data.find((r) => r.name === 'decode') : undefined;
    };
    await setReady(false);
    const seen = await waitFor('status.roles to name the instance not ready', 60_000, async () => {
      const decode = await decodeOf();
      return decode?.notReady ? decode : false;
    }, 250);
    expect(seen).toMatchObject({ replicas: 2, readyReplicas: 1, notReady: ['sr-1/decode-0'] });
    await setReady(true);
    const back = await waitFor('the instance ready again', 60_000, async () => {
      const decode = await decodeOf();
      return decode?.readyReplicas === 2 ? decode : false;
    }, 250);
    expect(back.notReady).toBeUndefined();
  }, 180_000);
});

describe('kubectl describe of a ModelServing a quota refuses after a routine scale', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple | undefined;
  const kubectl = (...args: string[]) => run(kubectlPath(), ['--kubeconfig', inject('kubeconfig'), '-n', sb.namespace, ...args]);

  beforeAll(async () => {
    sb = await openSandbox('ms-describe');
    ripple = await startRipple(sb, [modelServingDefinition(), emitEventsDefinition()]);
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('tells what to fix in words, with no Warning from the routine scaling', async () => {
    const name = 'qd';
    await createMs(sb, msManifest(name, sb.namespace, { replicas: 1, roles: one(IMAGE_A) }));
    await waitConverged(sb, name, { podsPerGroup: 1 });
    // A routine scale that fits, then one the quota refuses.
    await scale(sb, name, 2);
    await waitConverged(sb, name, { podsPerGroup: 1 });
    const quotaPath = `/api/v1/namespaces/${sb.namespace}/resourcequotas`;
    await kubeRequest(sb.kc, quotaPath, { method: 'POST', body: { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'pods' }, spec: { hard: { pods: '2' } } } });
    await waitFor('the quota to be counted', 60_000, async () => {
      const q = z.object({ status: z.object({ used: z.object({ pods: z.string() }).optional() }).optional() }).parse(await kubeRequest(sb.kc, `${quotaPath}/pods`));
      return q.status?.used?.pods === '2';
    });
    await scale(sb, name, 3);
    const refused = await waitFor('status to say the quota refused a pod', 60_000, async () => {
      const ms = await getMs(sb, name);
      return /exceeded quota/.test(condition(ms, 'Ready')?.message ?? '') ? ms : false;
    }, 250);
    expect(condition(refused, 'Ready')?.reason).toBe('InsufficientCapacity');
    const list = objectListKey(sb.prefix, { namespace: sb.namespace, kind: 'ModelServing', name });
    await waitSettled(sb.redis, sb.prefix, [list]);
    const { stdout } = await waitFor('describe to show the refusal Event', 30_000, async () => {
      const out = await kubectl('describe', 'modelserving', name);
      return /Warning .*exceeded quota/.test(out.stdout) ? out : false;
    }, 500);
    if (process.env.DESCRIBE_OUT) writeFileSync(process.env.DESCRIBE_OUT, stdout);
    expect(stdout).toMatch(/the API server refused pod qd-2-main-0-0: .*exceeded quota: pods/);
    expect(stdout).toMatch(/to fix: raise ResourceQuota "pods" in this namespace, or lower spec.replicas/);
    // The per-role summary names the instance that cannot be created.
    expect(stdout).toMatch(/Not Ready:\s+qd-2\/main-0/);
    const warnings = stdout.split('\n').filter((l) => /^\s+Warning\s/.test(l));
    expect(warnings.length).toBeGreaterThan(0);
    // Every Warning is about the refusal; none says that routine scaling made the object not Ready.
    for (const w of warnings) expect(w).toMatch(/exceeded quota/);
  }, 240_000);
});

describe('emit-events request lists (issue 13 item 9)', () => {
  let sb: TestSandbox;
  let host: FunctionHost;

  beforeAll(async () => {
    sb = await openSandbox('ev-cap');
    host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: [emitEventsDefinition()], log: createLogger('ev-cap', 'warn'), namespace: sb.namespace });
  });
  afterAll(async () => {
    await host?.close();
    await sb?.cleanup();
  });

  it('keeps at most the cap of pending requests per object, the oldest first, while nothing drains them', async () => {
    // No worker runs: the requests pile up as they would while the API server refuses Events.
    const sink = queueEventSink(host.redis, host.prefix, () => host.queue(EMIT_EVENTS), Date.now, 5);
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: sb.namespace, name: 'busy' };
    for (let i = 0; i < 8; i++) await sink.emit({ involvedObject: ref, type: 'Normal', reason: 'Tick', message: `tick ${i}`, source: 'test' });
    const raws = await sb.redis.lrange(objectListKey(sb.prefix, ref), 0, -1);
    expect(raws.map((r) => z.object({ message: z.string() }).parse(JSON.parse(r)).message)).toEqual(['tick 0', 'tick 1', 'tick 2', 'tick 3', 'tick 4']);
    expect(MAX_PENDING_EVENT_REQUESTS).toBe(1000);
  });

  it('logs (with the object) and counts each request dropped over the cap; the caller is not failed for it', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const registry = new Registry();
    const sink = queueEventSink(host.redis, host.prefix, () => host.queue(EMIT_EVENTS), Date.now, 5, { log, registry });
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: sb.namespace, name: 'busier' };
    for (let i = 0; i < 8; i++) await sink.emit({ involvedObject: ref, type: 'Normal', reason: 'Tick', message: `tick ${i}`, source: 'test' });
    expect(await sb.redis.llen(objectListKey(sb.prefix, ref))).toBe(5);
    expect(await registry.getSingleMetricAsString('ripple_event_requests_dropped_total')).toContain('ripple_event_requests_dropped_total{kind="ConfigMap"} 3');
    const dropped = lines
      .map((l) => z.object({ msg: z.string() }).passthrough().parse(JSON.parse(l)))
      .filter((l) => l.msg.startsWith('event request dropped'));
    expect(dropped.map((l) => l.message)).toEqual(['tick 5', 'tick 6', 'tick 7']);
    expect(dropped[0]).toMatchObject({ involvedObject: { namespace: sb.namespace, kind: 'ConfigMap', name: 'busier' }, type: 'Normal', reason: 'Tick', pending: 6, cap: 5 });
  });
});
