/**
 * One reconcile of one ModelServing: read fresh, plan (plan/, pure), apply, then record what became
 * of it — the role-status datastore with its Events, and status (Kthena's fields and conditions beside
 * the shared state engine's phase/Ready/ConfigValid).
 */
import { readsDisruptionBudgets } from './plan/disruption.js';
import { MODEL_SERVING_API_VERSION, MODEL_SERVING_KIND, type ModelServing } from '../../api/modelserving.js';
import { z } from 'zod';
import type { KubeObject } from '../../kube/object.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { TerminalError } from '../../base/errors.js';
import type { Handler, HandlerContext, ReconcileResult } from '../../runtime/function.js';
import { writeStatus, type StatusOwner, type StatusPatch } from '../../status/write.js';
import { applyActions, RefusedChildError, RejectedChildError } from './apply.js';
import { REFUSAL_RECHECK_MS } from './refusal.js';
import { modelServingConfig, type ModelServingConfig } from './config.js';
import { peekChildrenCache } from './children-cache.js';
import { nextMarks, writeMarksStore, WriteTracker, type WriteMarks } from './write-marks.js';
import { drainFollowUp, drainOnDeletion, enrolled, keepDeletionFinalizer, lifecycleOptedIn, maskLifecycleDeletions } from './lifecycle.js';
import { isNamespaceTerminating, terminatingMemory } from './namespace-terminating.js';
import { clusterCapabilities, listDisruptionBudgets } from './observe.js';
import { objectOf, parsedOf, readState, resourceVersionOf } from './read-state.js';
import type { Action, Blocked } from './plan/actions.js';
import { LABEL_ENTRY, LABEL_GROUP_NAME, LABEL_ROLE } from './plan/names.js';
import { FOREIGN_RECHECK_MS, foreignName, planModelServing } from './plan/plan.js';
import type { RoleTransition } from './plan/role-status.js';
import { roleStore, snapshotsEqual } from './role-store.js';
import { holdBackMs } from './status-coalesce.js';
import { lwsOwnerOf, lwsStatusFrom, LWS_SPEC_HASH_ANNOTATION, shadowModelServing } from './lws/shadow.js';
import { applyShadow, readLeaderWorkerSet, writeLwsStatus } from './lws/sync.js';
import { invalidSpecStatus, SERVING_GROUPS_CHILD, unifiedStatus, type PreviousState, type UnifiedStatus } from './unified-status.js';
import type { ClassifiedError } from '../../status/engine.js';

/** Kthena's recorder component: tools that filter Events by source keep working. */
export const EVENT_SOURCE = 'modelserving-controller';

function statusOwner(obj: KubeObject): StatusOwner {
  const m = obj.metadata;
  return {
    metadata: {
      name: m.name,
      ...(m.namespace !== undefined ? { namespace: m.namespace } : {}),
      ...(m.uid !== undefined ? { uid: m.uid } : {}),
      ...(m.generation !== undefined ? { generation: m.generation } : {}),
      ...(m.resourceVersion !== undefined ? { resourceVersion: m.resourceVersion } : {}),
    },
    status: (obj as Record<string, unknown>).status,
  };
}

/**
 * This reconcile's writes to the ModelServing and its children (write-marks.ts), and how to save them:
 * the next reconcile plans from the cache only once it has seen them.
 */
interface Marked {
  written: WriteTracker;
  /** Saved once, when the reconcile ends (whichever way). */
  save: () => Promise<void>;
  /** A progress-only status write held back (status-coalesce.ts): come back after this long. */
  heldBackMs?: number;
}

/**
 * The status patch (a merge patch preconditioned on the resourceVersion read, as status/write.ts's), noting
 * the resourceVersion it left: the next reconcile must not plan from a cached ModelServing older than it.
 */
function markedStatusPatch(ctx: HandlerContext, obj: KubeObject, marked: Marked): StatusPatch {
  const path = `${objectPath(Resources.modelServing, obj.metadata.namespace, obj.metadata.name)}/status`;
  return async (status, resourceVersion) => {
    const wait = holdBackMs((obj as Record<string, unknown>).status, status, ctx.now().getTime());
    if (wait > 0) {
      marked.heldBackMs = wait;
      return;
    }
    const body: Record<string, unknown> = { status };
    if (resourceVersion !== undefined) body.metadata = { resourceVersion };
    try {
      marked.written.note('modelservings', resourceVersionOf(await kubeRequest(ctx.kc, path, { method: 'PATCH', body, contentType: 'application/merge-patch+json' })));
    } catch (err) {
      // A 409 wrote nothing; any other failure may have landed without us knowing its version.
      if (!isStatus(err, 409)) marked.written.noteUnknown();
      throw err;
    }
  };
}

async function writeUnified(ctx: HandlerContext, obj: KubeObject, u: UnifiedStatus, marked: Marked) {
  // conditionEvents (the progress deadline's Warning) go through writeStatus's at-least-once outbox.
  return writeStatus(ctx, {
    resource: Resources.modelServing,
    object: statusOwner(obj),
    input: u.input,
    fields: u.fields,
    conditionEvents: u.conditionEvents ?? [],
    source: EVENT_SOURCE,
    patch: markedStatusPatch(ctx, obj, marked),
  });
}

/** Reports a spec that can never work on status (ConfigValid=False, phase Failed) and stops retrying. */
async function rejectSpec(ctx: HandlerContext, obj: KubeObject, problems: string[], marked: Marked): Promise<never> {
  const previous = z.object({ conditions: z.array(z.object({ type: z.string() })).optional() }).safeParse((obj as Record<string, unknown>).status);
  await writeUnified(ctx, obj, invalidSpecStatus(problems, previous.success ? previous.data.conditions : undefined), marked);
  ctx.log.warn({ problems }, 'invalid ModelServing spec; reported on status (ConfigValid=False)');
  throw new TerminalError(problems.join('; '));
}

/** Which template a child came from, as a field path the user can fix. */
function templatePath(ms: ModelServing, a: Action): string {
  if (a.kind !== 'createPod') return 'spec.template.roles';
  const roleName = a.pod.metadata?.labels?.[LABEL_ROLE];
  const i = ms.spec.template.roles.findIndex((r) => r.name === roleName);
  const which = a.pod.metadata?.labels?.[LABEL_ENTRY] === 'true' ? 'entryTemplate' : 'workerTemplate';
  return i >= 0 ? `spec.template.roles[${i}].${which}` : 'spec.template.roles';
}

/** Which template a rejected child came from, as a field path the user can fix. */
function rejectionProblem(ms: ModelServing, err: RejectedChildError): string {
  const a = err.action;
  if (a.kind === 'createPod') {
    return `${templatePath(ms, a)}: the API server rejected pod ${a.pod.metadata?.name ?? ''} built from it: ${err.apiMessage}`;
  }
  return `spec.template: the API server rejected an object built from it: ${err.message}`;
}

function previousState(ms: ModelServing): PreviousState {
  const st = ms.status as { phase?: unknown; observedGeneration?: unknown } | undefined;
  return {
    phase: typeof st?.phase === 'string' ? st.phase : undefined,
    observedGeneration: typeof st?.observedGeneration === 'number' ? st.observedGeneration : undefined,
    generation: ms.metadata.generation,
  };
}

function takenBy(a: Action): Blocked {
  const meta = a.kind === 'createPod' ? a.pod.metadata : a.kind === 'createService' ? a.service.metadata : undefined;
  return foreignName(a.kind === 'createService' ? 'Service' : 'pod', meta?.name ?? '', meta?.labels?.[LABEL_GROUP_NAME] ?? '');
}

function involvedObjectOf(ms: { metadata: { name: string; namespace?: string | undefined; uid?: string | undefined } }) {
  return {
    apiVersion: MODEL_SERVING_API_VERSION,
    kind: MODEL_SERVING_KIND,
    namespace: ms.metadata.namespace,
    name: ms.metadata.name,
    ...(ms.metadata.uid ? { uid: ms.metadata.uid } : {}),
  };
}

async function announce(ctx: HandlerContext, ms: ModelServing, transitions: readonly RoleTransition[]): Promise<void> {
  const involvedObject = involvedObjectOf(ms);
  await ctx.events.emitAll(transitions.map((t) => ({ involvedObject, type: t.type, reason: t.reason, message: t.message, source: EVENT_SOURCE })));
}

function earliest(...values: Array<number | undefined>): number | undefined {
  const defined = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  return defined.length ? Math.max(0, Math.min(...defined)) : undefined;
}

async function saveMarks(marksStore: ReturnType<typeof writeMarksStore>, previous: WriteMarks, listed: boolean, written: WriteTracker): Promise<void> {
  const next = nextMarks(previous, listed, written);
  if (next) await marksStore.save(next);
}

/** Where the Warning about a stuck drain is remembered as sent (per UID: a namesake is another object). */
function drainWarnedKey(prefix: string, uid: string): string {
  return `${prefix}:modelserving:drain-warned:${uid}`;
}
const DRAIN_WARNED_TTL_SECONDS = 7 * 24 * 3600;

/** One step of the drain of a ModelServing being deleted, with one Warning when it has waited too long. */
async function drainStep(ctx: HandlerContext, config: ModelServingConfig, obj: KubeObject): Promise<ReconcileResult | void> {
  const waiting = await drainOnDeletion(ctx, obj);
  const next = drainFollowUp(waiting, obj.metadata.deletionTimestamp ?? '', ctx.now(), config.MODELSERVING_DELETION_WARN_AFTER_MS);
  if (next.overdue !== undefined) {
    const key = drainWarnedKey(ctx.prefix, obj.metadata.uid ?? `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`);
    // SET NX: the Warning goes once, however many reconciles find the drain stuck.
    if ((await ctx.redis.set(key, '1', 'EX', DRAIN_WARNED_TTL_SECONDS, 'NX')) === 'OK') {
      try {
        await ctx.events.emit({ involvedObject: involvedObjectOf(obj), type: 'Warning', reason: 'DeletionHeld', message: next.overdue, source: EVENT_SOURCE });
      } catch (err) {
        await ctx.redis.del(key);
        throw err;
      }
      ctx.log.warn({ waiting }, 'ModelServing deletion held by pods waiting on PodOpsLifecycle');
    }
  }
  return next.requeueAfterMs === undefined ? undefined : { requeueAfterMs: next.requeueAfterMs };
}

export const reconcile: Handler = async (req, ctx): Promise<ReconcileResult | void> => {
  const config = modelServingConfig(ctx.env);
  const namespace = req.namespace;
  if (!namespace) throw new TerminalError(`ModelServing key ${req.key} has no namespace`);
  const store = roleStore(ctx.redis, ctx.prefix, namespace, req.name);
  const dying = terminatingMemory(ctx.redis, ctx.prefix, namespace, req.name);
  const marksStore = writeMarksStore(ctx.redis, ctx.prefix, namespace, req.name);

  // The records in Redis are read at once; then the ModelServing and its children, from the cache once it
  // has seen the writes the marks name (read-state.ts). Any skew between them is what the next reconcile
  // (brought by the newer objects' own events) sees.
  const [cluster, loaded, refusedUid, marks] = await Promise.all([
    clusterCapabilities(ctx.kc, ctx.redis, ctx.prefix),
    store.loadRaw(),
    dying.read(),
    marksStore.read(),
  ]);
  const state = await readState(ctx, config, cluster, namespace, req.name, marks);
  if (state.gone) {
    // A LeaderWorkerSet of this name is served through a ModelServing of its name (lws/): create it.
    const lws = await readLeaderWorkerSet(ctx.kc, namespace, req.name);
    if (lws && !lws.metadata.deletionTimestamp) {
      await applyShadow(ctx.kc, namespace, req.name, shadowModelServing(lws));
      ctx.log.info({ leaderWorkerSet: req.name }, 'created the ModelServing that serves a LeaderWorkerSet');
      return;
    }
    // Gone: its children go with their owner references; only the datastore entries are ours to drop.
    peekChildrenCache(ctx.kc, namespace)?.forget(req.name);
    await Promise.all([store.remove(), marksStore.remove(), refusedUid === null ? undefined : dying.forget()]);
    return;
  }
  const { raw, listed } = state;
  const written = new WriteTracker();
  // Until the children were awaited, a reconcile that listed may not clear an unknown mark (its lists may fail).
  let childrenSeen = false;
  const marked: Marked = { written, save: () => saveMarks(marksStore, marks, listed && childrenSeen, written) };
  // One save of the marks at the end, whatever the path: a reconcile that dies before it only makes the next
  // one plan from a cache that may miss these writes, whose creates are then answered 409 (taken as a write of
  // unknown outcome: that one lists) and whose status write is refused with 409 and retried.
  const planAndApply = async (): Promise<ReconcileResult | void> => {
    const read = objectOf(raw);
    // The finalizer and the deletion need only metadata, so come before the spec is judged: an invalid spec must not
    // keep an opted-in ModelServing from being deleted, nor its opt-out from letting go of the finalizer.
    // Later writes (status) are preconditioned on the resourceVersion the finalizer write left.
    const obj = { ...read, metadata: await keepDeletionFinalizer(ctx.kc, read) };
    if (obj.metadata.resourceVersion !== read.metadata.resourceVersion) written.note('modelservings', obj.metadata.resourceVersion);
    // Deleting: an opted-in ModelServing holds its deletion until its pods went through the lifecycle.
    if (obj.metadata.deletionTimestamp) return drainStep(ctx, config, obj);
    // The shadow of a LeaderWorkerSet follows it before anything else, whatever its own spec says now; its
    // own event (a new generation) brings the reconcile that plans from the new spec.
    const lwsOwner = lwsOwnerOf(obj.metadata);
    const lws = lwsOwner ? await readLeaderWorkerSet(ctx.kc, namespace, lwsOwner.name) : undefined;
    const servesLws = lws !== undefined && lws.metadata.uid === lwsOwner?.uid && !lws.metadata.deletionTimestamp;
    if (servesLws) {
      const shadow = shadowModelServing(lws);
      if (obj.metadata.annotations?.[LWS_SPEC_HASH_ANNOTATION] !== shadow.hash) {
        const rv = await applyShadow(ctx.kc, namespace, req.name, shadow);
        if (rv === undefined) written.noteUnknown();
        else written.note('modelservings', rv);
        ctx.log.info({ leaderWorkerSet: lws.metadata.name }, 'updated the ModelServing from its LeaderWorkerSet');
        return;
      }
    }
    const parsed = parsedOf(raw);
    if (!parsed.ok) return rejectSpec(ctx, obj, parsed.errors, marked);
    const ms = parsed.value;
    const uid = ms.metadata.uid ?? '';
    if (refusedUid !== null && refusedUid === uid) {
      // Its namespace is being deleted: nothing can be created, and the ModelServing goes next.
      ctx.log.debug('namespace is being deleted; not reconciling');
      return;
    }

    const stored = store.forOwner(loaded, uid);
    if (stored && stored.outbox.length > 0) {
      // A previous reconcile saved these and died before they were sent.
      await announce(ctx, ms, stored.outbox);
      await store.clearOutbox(stored.seq);
    }
    const children = await state.children;
    childrenSeen = true;
    const now = ctx.now();
    const masked = maskLifecycleDeletions(children.pods, now);

    const disruptionBudgets = readsDisruptionBudgets(ms) ? await listDisruptionBudgets(ctx.kc, namespace, ms.metadata.name) : undefined;
    const plan = planModelServing({
      modelServing: ms,
      ...(disruptionBudgets ? { disruptionBudgets } : {}),
      pods: masked.pods,
      services: children.services,
      controllerRevisions: children.controllerRevisions,
      ...(children.podGroups ? { podGroups: children.podGroups } : {}),
      // An empty or namesake's entry is no snapshot: the planner rebuilds it silently from the pods.
      ...(stored && (Object.keys(stored.snapshot.roles).length > 0 || Object.keys(stored.snapshot.groups).length > 0)
        ? { roleStatus: stored.snapshot }
        : {}),
      cluster,
      now,
      options: { unscheduledAfterSeconds: config.MODELSERVING_UNSCHEDULED_AFTER_SECONDS },
    });
    if (plan.warnings.length > 0) ctx.log.info({ warnings: plan.warnings }, 'ModelServing warnings');

    const optedIn = lifecycleOptedIn(ms);
    const actions: Action[] = [
      // Deletions already handed to PodOpsLifecycle: driven on until the pods are gone.
      ...masked.pending.map((p): Action => ({ kind: 'deletePod', name: p.name, uid: p.uid, reason: 'deletion through PodOpsLifecycle' })),
      ...plan.actions.map((a): Action => (a.kind === 'createPod' ? { ...a, pod: enrolled(a.pod, optedIn) } : a)),
    ];
    let applied;
    try {
      applied = await applyActions(actions, {
        written,
        kc: ctx.kc,
        namespace,
        log: ctx.log,
        now: ctx.now,
        concurrency: config.MODELSERVING_APPLY_CONCURRENCY,
        lifecycle: optedIn || masked.pending.length > 0,
        owner: ms,
      });
    } catch (err) {
      if (err instanceof RejectedChildError) return rejectSpec(ctx, obj, [rejectionProblem(ms, err)], marked);
      if (err instanceof RefusedChildError) {
        // A quota, PodSecurity, a webhook or RBAC: status says which and what the API server said; the
        // queue does not back off on it (nothing changes by retrying sooner), the ModelServing is looked
        // at again slowly, and the role datastore waits for a plan that went through.
        const a = err.action;
        const what = a.kind === 'createPod' ? `pod ${a.pod.metadata?.name ?? ''}` : a.kind === 'createService' ? `Service ${a.service.metadata?.name ?? ''}` : 'a child';
        const where = err.refusal.class === 'Spec' ? `${templatePath(ms, a)}: ` : '';
        const u = unifiedStatus(plan.status, plan.problems, children.pods, plan.blocked, previousState(ms));
        const refused: ClassifiedError = {
          class: err.refusal.class,
          reason: err.refusal.reason,
          child: SERVING_GROUPS_CHILD,
          message: `${where}the API server refused ${what}: ${err.refusal.message}`,
        };
        await writeUnified(ctx, obj, { ...u, input: { ...u.input, errors: [...(u.input.errors ?? []), refused] } }, marked);
        ctx.log.warn({ refusal: err.refusal }, 'a child was refused; reported on status');
        return { requeueAfterMs: REFUSAL_RECHECK_MS };
      }
      if (isNamespaceTerminating(err)) {
        await dying.remember(uid);
        ctx.log.info('namespace is being deleted; no more children are created for this ModelServing');
        return;
      }
      throw err;
    }
    if (actions.length > 0) {
      const counts: Record<string, number> = {};
      for (const a of actions) counts[a.kind] = (counts[a.kind] ?? 0) + 1;
      ctx.log.info({ actions: counts, waitingOnLifecycle: applied.waiting, revision: plan.updateRevision }, 'applied plan');
    }

    // Only after the actions succeeded: a plan that failed half-way is planned again from the pods.
    // The datastore (and its Events) and status are independent records of the same plan.
    const recordRoles = async () => {
      if (plan.roleTransitions.length === 0 && snapshotsEqual(stored?.snapshot, plan.roleStatus)) return;
      const seq = await store.save(uid, stored?.seq ?? '', plan.roleStatus, plan.roleTransitions, now);
      if (seq === undefined) ctx.log.warn('role status was written by another reconcile meanwhile; keeping theirs');
      else if (plan.roleTransitions.length > 0) {
        await announce(ctx, ms, plan.roleTransitions);
        await store.clearOutbox(seq);
      }
    };
    // Names someone else's object holds (found by the creates' 409s): on status, and looked at again
    // slowly, since that object's events do not come to this ModelServing.
    const taken = applied.taken.map((a) => takenBy(a));
    if (taken.length > 0) ctx.log.warn({ taken: taken.map((t) => t.message) }, 'names held by objects this ModelServing does not own');
    const blocked = [...plan.blocked, ...taken];
    const lwsStatus = servesLws ? lwsStatusFrom(lws, plan.status) : undefined;
    const [statusWritten] = await Promise.all([
      writeUnified(ctx, obj, unifiedStatus(plan.status, plan.problems, children.pods, blocked, previousState(ms)), marked),
      recordRoles(),
      // The LeaderWorkerSet's status, backfilled from the same plan (Kthena's updateLWSStatus).
      lws && lwsStatus ? writeLwsStatus(ctx.kc, lws, lwsStatus) : undefined,
    ]);
    const requeueAfterMs = earliest(
      plan.requeueAfterSeconds === undefined ? undefined : plan.requeueAfterSeconds * 1000,
      taken.length > 0 ? FOREIGN_RECHECK_MS : undefined,
      applied.requeueAfterMs,
      statusWritten.requeueAfterMs,
      marked.heldBackMs,
    );
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  };
  try {
    return await planAndApply();
  } finally {
    await marked.save();
  }
};
