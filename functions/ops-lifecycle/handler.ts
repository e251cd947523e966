import type { KubeConfig } from '@kubernetes/client-node';
import type { HandlerContext, ReconcileRequest, ReconcileResult } from '../../runtime/function.js';
import { serviceCooperationEnabled, trafficOffModeOf } from './config.js';
import { cooperateWithServices } from './service-cooperator/cooperate.js';
import { finishGraceDelete } from './admission/grace-delete-finish.js';
import { listPodEndpoints } from './pod-access/endpoint-slices.js';
import { isConflict, listControlledPods, patchPodMetadata, patchServiceReady, readPod, readServiceSelector } from './pod-access/pod-api.js';
import { wokenBy } from './pod-access/cache-freshness.js';
import { controlledPodCacheFor } from './pod-access/pod-cache.js';
import { controllerUidOf, podStateOf, type LifecyclePod } from './pod-access/pod.js';
import { CONTROLLED_PODS_SELECTOR } from './triggers.js';
import { OPS_LIFECYCLE } from './definition.js';
import {
  expectationsToVerify,
  isEmptyDiff,
  isServiceExpectationStale,
  liveLifecycles,
  availabilityAllows,
  MAX_UNAVAILABLE_ANNOTATION,
  nanosFromDate,
  needsTrafficCheck,
  parseBudget,
  postCheckPasses,
  type TransitionChecks,
  parseLifecycleView,
  planReconcile,
  readyToOperate,
  trafficOff,
  type PodState,
  awaitsPreCheck,
} from './protocol/index.js';

/** Reported as the Event source, so `kubectl describe pod` says who flipped the gate. */
const EVENT_SOURCE = 'ops-lifecycle';

/**
 * Expected finalizers of Services that are gone or no longer select the Pod: their cooperation controller will
 * never add them back, so they must not hold the Pod. Only looked up when the answer matters (no lifecycle, or
 * one completing), because during preparing/operating every cooperator's finalizer is missing on purpose.
 */
async function staleExpectations(kc: KubeConfig, pod: PodState): Promise<string[]> {
  const live = liveLifecycles(parseLifecycleView(pod.labels));
  const waitsOnExpectations = live.length === 0 || live.some((e) => e.stage === 'completing');
  if (!waitsOnExpectations) return [];
  // One GET per unmet expectation, all at once rather than one after another.
  const verdicts = await Promise.all(
    expectationsToVerify(pod).map(async (e) => {
      const service = await readServiceSelector(kc, e.service.namespace, e.service.name);
      return isServiceExpectationStale(service, pod.labels) ? e.key : undefined;
    }),
  );
  return verdicts.filter((k): k is string => k !== undefined);
}

/**
 * May a preparing ID be granted operate as far as traffic goes (protocol/trafficOff)? The EndpointSlices are
 * listed only when the answer can change the plan. An EndpointSlice that stops routing to the Pod triggers a
 * reconcile (triggers.ts), so a wait here ends with the EndpointSlice controller's write, not a timer.
 */
async function isTrafficOff(ctx: HandlerContext, pod: LifecyclePod, state: PodState): Promise<boolean> {
  const mode = trafficOffModeOf(ctx.env);
  if (mode === 'gate') return true;
  if (!needsTrafficCheck(parseLifecycleView(state.labels), readyToOperate(state))) return false;
  const namespace = pod.metadata.namespace ?? '';
  const endpoints = mode === 'endpointslices' ? await listPodEndpoints(ctx.kc, namespace, pod.metadata.name) : [];
  const verdict = trafficOff({ mode, pod: state, podName: pod.metadata.name, podUid: pod.metadata.uid, endpoints });
  if (!verdict.off) ctx.log.info({ mode, waitingFor: verdict.waitingFor }, 'operate waits for traffic to be off');
  return verdict.off;
}

/**
 * kuperator's PodTransitionRule stages, as Ripple's own checks:
 * - pre-check: the owner's availability budget (MAX_UNAVAILABLE_ANNOTATION on the Pod); its Pods are listed only
 *   while an ID is about to be pre-checked and the Pod has a budget and a controlling owner;
 * - post-check: the Pod's containers are ready again after the operation.
 * A budget that cannot be read holds pre-check and is reported as stuck (it says what to fix).
 */
async function transitionChecks(ctx: HandlerContext, pod: LifecyclePod, state: PodState): Promise<Partial<TransitionChecks> & { problem?: string }> {
  const checks: Partial<TransitionChecks> = { postCheck: postCheckPasses(state) };
  const waiting = awaitsPreCheck(state.labels);
  if (!waiting) return checks;
  const parsed = parseBudget(pod.metadata.annotations?.[MAX_UNAVAILABLE_ANNOTATION]);
  if (!parsed.ok) return { ...checks, preCheck: false, problem: parsed.error };
  const owner = controllerUidOf(pod);
  if (parsed.budget === undefined || owner === undefined) return checks;
  const siblings = (await listControlledPods(ctx.kc, pod.metadata.namespace ?? '', CONTROLLED_PODS_SELECTOR)).filter(
    (p) => p.metadata.uid !== pod.metadata.uid && controllerUidOf(p) === owner,
  );
  const verdict = availabilityAllows({ pod: state, siblings: siblings.map(podStateOf), budget: parsed.budget });
  if (!verdict.allowed) ctx.log.info({ reason: verdict.reason }, 'pre-check holds: availability budget');
  return { ...checks, preCheck: verdict.allowed };
}

/**
 * Every reconcile plans from the worker's watched cache of controlled Pods (pod-access/pod-cache.ts) when the
 * cache is fresh enough for what woke it (pod-access/cache-freshness.ts: never older than what this process last
 * planned from or wrote, and for a Pod event, past it); otherwise it reads the Pod live. So the
 * 60 s resync of an unchanged Pod, and a reconcile woken by a change the cache already holds, make no request. A
 * stale cached Pod can only cost a 409 (every write is preconditioned on the version planned from): the step is
 * then redone once from the live Pod, and a 409 after that propagates like any other.
 */
export async function reconcile(req: ReconcileRequest, ctx: HandlerContext): Promise<ReconcileResult | void> {
  const namespace = req.namespace;
  if (namespace === undefined) return;
  const cache = controlledPodCacheFor(ctx.kc, namespace);
  const cached = cache.read(namespace, req.name, wokenBy(req.reason, req.minResourceVersion), (key) => ctx.enqueue(OPS_LIFECYCLE, key));
  if (cached !== undefined) {
    try {
      cache.noteReconciled(cached, await step({ ...req, namespace }, ctx, cached));
      return;
    } catch (err) {
      cache.noteReconciled(cached);
      if (!isConflict(err)) throw err;
      ctx.log.info({ resourceVersion: cached.metadata.resourceVersion }, 'cached pod was stale (409); reading it live');
    }
  }
  const live = await readPod(ctx.kc, { namespace, name: req.name });
  if (live === undefined) return;
  let after: LifecyclePod | undefined;
  try {
    after = await step({ ...req, namespace }, ctx, live);
  } finally {
    cache.noteReconciled(live, after);
  }
}

/**
 * One step of the PodOpsLifecycle for one Pod: from the Pod as read, plan (protocol/planReconcile), then write the
 * label/annotation changes and the service-ready condition, each preconditioned on the resourceVersion the plan
 * was made from. A 409 propagates: the queue retries with backoff and the retry plans from the newer Pod.
 *
 * The watch event of each write brings the next step, so nothing here is timed: operation delays belong to
 * the operator (client/allowOps returns how long to wait), and waits on cooperators end with their writes.
 * Returns the Pod as its last write answered (as read when nothing was written): the cache's next floor.
 */
async function step(req: ReconcileRequest & { namespace: string }, ctx: HandlerContext, read: LifecyclePod): Promise<LifecyclePod> {
  // A DELETE GraceDelete refused, now granted operate: the lifecycle deletes the Pod (admission/grace-delete-finish.ts).
  if (await finishGraceDelete(ctx, read)) return read;
  // The Service cooperator first: the lifecycle then plans from the finalizers it left, in the same reconcile.
  // Turned off, it still releases the finalizers a Pod kept from when it was on (no I/O for a Pod without any).
  const pod = await cooperateWithServices(ctx, read, serviceCooperationEnabled(ctx.env));
  const state = podStateOf(pod);

  const { problem, ...checks } = await transitionChecks(ctx, pod, state);
  const plan = planReconcile({
    pod: state,
    now: nanosFromDate(ctx.now()),
    staleExpectationKeys: state.deleting ? [] : await staleExpectations(ctx.kc, state),
    trafficOff: await isTrafficOff(ctx, pod, state),
    checks,
  });
  if (problem !== undefined) plan.stuck.push(problem);
  // Stuck states are reported whether or not anything moves: nothing will, until a human acts. Each resync
  // repeats them (emit-events counts the repeats on one Event).
  for (const message of plan.stuck) {
    await ctx.events.emit({
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: req.namespace, name: req.name, uid: pod.metadata.uid },
      type: 'Warning',
      reason: 'LifecycleStuck',
      message,
      source: EVENT_SOURCE,
    });
  }
  if (plan.skipped !== undefined || !plan.changed) return pod;
  // Only when something moves, so a Pod without the gate is not reported on every resync.
  for (const warning of plan.warnings) ctx.log.warn({ warning }, 'pod lifecycle problem');

  let written: LifecyclePod = pod;
  if (!isEmptyDiff(plan.labels) || !isEmptyDiff(plan.annotations)) {
    written = await patchPodMetadata(ctx.kc, pod, { labels: plan.labels, annotations: plan.annotations });
  }
  // After the labels: the gate follows the labels just written, and its own watch event is what lets a
  // preparing ID move to operate (never on a gate value the same plan is about to write).
  if (plan.serviceReady !== undefined) written = await patchServiceReady(ctx.kc, written, plan.serviceReady);

  for (const e of plan.events) {
    await ctx.events.emit({
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: req.namespace, name: req.name, uid: pod.metadata.uid },
      type: e.type,
      reason: e.reason,
      message: e.message,
      source: EVENT_SOURCE,
    });
  }
  ctx.log.info(
    {
      phase: plan.view.phase,
      ids: plan.view.lifecycles.map((l) => `${l.id}:${l.stage}`),
      set: Object.keys(plan.labels.set),
      removed: plan.labels.remove,
      serviceReady: plan.serviceReady?.status,
      resourceVersion: written.metadata.resourceVersion,
    },
    'lifecycle advanced',
  );
  return written;
}
