/**
 * What the dashboard's object view shows, read on each request from where Ripple keeps it — the API
 * server (objects and their status), the role datastore (the same reader `ripple roles` uses), the
 * autoscaler's decisions and the queues in Redis — never from a copy of its own. Every read is bounded:
 * one page of objects (the API server's own `limit`/`continue`), one role-datastore read per ModelServing
 * on it, one decision per VariantAutoscaling on it, a fixed number of failed jobs per queue. Only status,
 * names and messages leave: no spec (a pod template may hold a credential), and URLs lose their
 * credentials (base/redact.ts).
 */
import { z } from 'zod';
import { KubeApiError } from '../kube/raw.js';
import { collectionPath, Resources, type ResourceRef } from '../kube/resources.js';
import type { WorkQueue } from '../queue/work-queue.js';
import { redactUrl } from '../base/redact.js';
import type { RoleStatusReader } from './role-status.js';

/** A VariantAutoscaling's last decision, as the autoscaler stored it in Redis. */
export interface DecisionSummary {
  desiredReplicas: number;
  currentReplicas: number;
  action: string;
  source: string;
  reason: string;
  /** RFC 3339: when the cycle decided it. */
  decidedAt: string;
}

/** A Pod's PodOpsLifecycle state, as ops-lifecycle reads it from the Pod's labels and finalizers. */
export interface PodOperationSummary {
  phase: string;
  operations: Array<{ id: string; type?: string; stage: string; operating: boolean }>;
  /** The protection finalizers cooperation controllers hold on it. */
  finalizers: string[];
}

/**
 * What the functions give the view (cli wires them, as it gives the role reader): ops/ knows no
 * function's formats, so it reads them through these.
 */
export interface ObjectSources {
  /** GET a path of the API server with this process's credentials, bounded in time. */
  get(path: string, query: Record<string, string>): Promise<unknown>;
  /** RIPPLE_WATCH_NAMESPACE, when Ripple reconciles one namespace only. */
  namespace?: string;
  decision(namespace: string, name: string): Promise<DecisionSummary | undefined>;
  /** undefined: the Pod is in no operation and no finalizer holds it. */
  podOperation(meta: { labels: Record<string, string>; finalizers: string[] }): PodOperationSummary | undefined;
  /** The label selector of Pods that take part in PodOpsLifecycle (`kusionstack.io/control=true`). */
  podSelector: string;
}

export class ObjectPageError extends Error {
  constructor(
    readonly status: 400 | 404,
    message: string,
  ) {
    super(message);
  }
}

export interface PageQuery {
  namespace?: string;
  limit: number;
  continue?: string;
}

export interface Page<T> {
  items: T[];
  continue?: string;
  /** Set when the kind is not served by the API server (its CRD is not installed). */
  missing?: string;
}

const conditionSchema = z.object({ type: z.string(), status: z.string(), reason: z.string().optional(), message: z.string().optional(), lastTransitionTime: z.string().optional() });
export type ConditionView = z.infer<typeof conditionSchema>;
const metaSchema = z.object({ name: z.string(), namespace: z.string().optional(), finalizers: z.array(z.string()).optional(), labels: z.record(z.string(), z.string()).optional(), deletionTimestamp: z.string().nullish() });
const listSchema = <T extends z.ZodType>(item: T) => z.object({ metadata: z.object({ continue: z.string().optional() }).optional(), items: z.array(item) });

const msSchema = z.object({
  metadata: metaSchema,
  spec: z.object({ replicas: z.number().optional() }).passthrough().optional(),
  status: z
    .object({
      phase: z.string().optional(),
      replicas: z.number().optional(),
      availableReplicas: z.number().optional(),
      updatedReplicas: z.number().optional(),
      currentRevision: z.string().optional(),
      updateRevision: z.string().optional(),
      conditions: z.array(conditionSchema).optional(),
    })
    .optional(),
});
const vaSchema = z.object({
  metadata: metaSchema,
  spec: z.object({ modelID: z.string().optional(), scaleTargetRef: z.object({ kind: z.string().optional(), name: z.string().optional() }).optional() }).passthrough().optional(),
  status: z
    .object({
      phase: z.string().optional(),
      conditions: z.array(conditionSchema).optional(),
      desiredOptimizedAlloc: z.object({ numReplicas: z.number().optional(), lastRunTime: z.string().optional() }).passthrough().optional(),
    })
    .optional(),
});
const podSchema = z.object({ metadata: metaSchema, status: z.object({ phase: z.string().optional() }).optional() });

/** The role datastore's value as `ripple roles` reads it: groups and roles with their states. */
const roleValueSchema = z.object({
  updatedAt: z.string().optional(),
  groups: z.record(z.string(), z.object({ state: z.string(), revision: z.string().optional() }).passthrough()),
  roles: z.record(z.string(), z.object({ group: z.string(), roleName: z.string(), roleId: z.string(), state: z.string(), revision: z.string().optional() }).passthrough()),
});

export interface ServingGroupView {
  name: string;
  state: string;
  revision?: string;
  roles: Array<{ role: string; id: string; state: string; revision?: string }>;
}

export interface ModelServingView {
  namespace: string;
  name: string;
  phase?: string;
  ready?: ConditionView;
  /** Conditions that are not as they should be (ConfigValid=False, Progressing stuck, …), with their messages. */
  conditions: ConditionView[];
  replicas: { desired?: number; current?: number; available?: number; updated?: number };
  revisions: { current?: string; update?: string };
  /** From the role datastore; absent when the function has stored nothing for it (yet). */
  groups?: ServingGroupView[];
  rolesUpdatedAt?: string;
  deleting: boolean;
}

export interface VariantAutoscalingView {
  namespace: string;
  name: string;
  phase?: string;
  target?: string;
  modelID?: string;
  conditions: ConditionView[];
  decision?: DecisionSummary;
  optimized?: { replicas?: number; lastRunTime?: string };
}

export interface PodOperationView extends PodOperationSummary {
  namespace: string;
  name: string;
  podPhase?: string;
  deleting: boolean;
}

const cleanCondition = (c: ConditionView): ConditionView => ({ ...c, ...(c.message !== undefined ? { message: redactUrl(c.message) } : {}) });

/** One page of a kind's objects from the API server (its own pagination); 404 means the kind is not served. */
async function listPage<T extends z.ZodType>(s: ObjectSources, ref: ResourceRef, q: PageQuery, item: T, extra: Record<string, string> = {}): Promise<Page<z.infer<T>>> {
  const namespace = q.namespace ?? s.namespace;
  if (s.namespace && q.namespace && q.namespace !== s.namespace) throw new ObjectPageError(400, `namespace: Ripple reconciles namespace ${s.namespace} only`);
  let raw: unknown;
  try {
    raw = await s.get(collectionPath(ref, namespace), { limit: String(q.limit), ...(q.continue ? { continue: q.continue } : {}), ...extra });
  } catch (err) {
    if (err instanceof KubeApiError && err.code === 404) return { items: [], missing: `${ref.kind} is not served by the API server (is its CRD installed?)` };
    // An expired (410) or foreign (400) continue token: the API server's own words are about its token format.
    if (err instanceof KubeApiError && (err.code === 410 || err.code === 400) && q.continue) throw new ObjectPageError(400, 'continue: the token expired or is not valid; start again without it');
    throw err;
  }
  const list = listSchema(item).safeParse(raw);
  if (!list.success) throw new Error(`unexpected ${ref.kind} list from the API server: ${list.error.issues[0]?.message ?? ''}`);
  const next = list.data.metadata?.continue;
  return { items: list.data.items, ...(next ? { continue: next } : {}) };
}

export function groupsOf(value: unknown): { groups: ServingGroupView[]; updatedAt?: string } | undefined {
  const v = roleValueSchema.safeParse(value);
  if (!v.success) return undefined;
  const groups = Object.entries(v.data.groups)
    .map(([name, g]): ServingGroupView => ({ name, state: g.state, ...(g.revision ? { revision: g.revision } : {}), roles: [] }))
    .sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
  for (const r of Object.values(v.data.roles)) {
    let g = groups.find((x) => x.name === r.group);
    if (!g) groups.push((g = { name: r.group, state: 'Unknown', roles: [] }));
    g.roles.push({ role: r.roleName, id: r.roleId, state: r.state, ...(r.revision ? { revision: r.revision } : {}) });
  }
  for (const g of groups) g.roles.sort((a, b) => a.role.localeCompare(b.role) || a.id.localeCompare(b.id, undefined, { numeric: true }));
  return { groups, ...(v.data.updatedAt ? { updatedAt: v.data.updatedAt } : {}) };
}

/** Conditions whose True is the news (a rollout under way, a stall); for every other type False or Unknown is. */
const TRUE_IS_NEWS = new Set(['Stalled', 'Progressing', 'UpdateInProgress']);
/** A condition worth showing beside the phase (the summary Ready is shown apart). */
const notable = (c: ConditionView) => c.type !== 'Ready' && (TRUE_IS_NEWS.has(c.type) ? c.status === 'True' : c.status !== 'True');

export async function modelServingPage(s: ObjectSources, roles: RoleStatusReader, q: PageQuery): Promise<Page<ModelServingView>> {
  const page = await listPage(s, Resources.modelServing, q, msSchema);
  const stored = await Promise.all(page.items.map((ms) => roles.get(ms.metadata.namespace ?? '', ms.metadata.name).catch(() => [])));
  const items = page.items.map((ms, i): ModelServingView => {
    const conditions = (ms.status?.conditions ?? []).map(cleanCondition);
    const ready = conditions.find((c) => c.type === 'Ready');
    const g = stored[i]?.[0] ? groupsOf(stored[i]![0]!.value) : undefined;
    return {
      namespace: ms.metadata.namespace ?? '',
      name: ms.metadata.name,
      ...(ms.status?.phase ? { phase: ms.status.phase } : {}),
      ...(ready ? { ready } : {}),
      conditions: conditions.filter(notable),
      replicas: { desired: ms.spec?.replicas, current: ms.status?.replicas, available: ms.status?.availableReplicas, updated: ms.status?.updatedReplicas },
      revisions: { current: ms.status?.currentRevision, update: ms.status?.updateRevision },
      ...(g ? { groups: g.groups, ...(g.updatedAt ? { rolesUpdatedAt: g.updatedAt } : {}) } : {}),
      deleting: Boolean(ms.metadata.deletionTimestamp),
    };
  });
  return { ...page, items };
}

export async function variantAutoscalingPage(s: ObjectSources, q: PageQuery): Promise<Page<VariantAutoscalingView>> {
  const page = await listPage(s, Resources.variantAutoscaling, q, vaSchema);
  const decisions = await Promise.all(page.items.map((va) => s.decision(va.metadata.namespace ?? '', va.metadata.name).catch(() => undefined)));
  const items = page.items.map((va, i): VariantAutoscalingView => {
    const d = decisions[i];
    const alloc = va.status?.desiredOptimizedAlloc;
    return {
      namespace: va.metadata.namespace ?? '',
      name: va.metadata.name,
      ...(va.status?.phase ? { phase: va.status.phase } : {}),
      ...(va.spec?.scaleTargetRef?.name ? { target: `${va.spec.scaleTargetRef.kind ?? 'Deployment'}/${va.spec.scaleTargetRef.name}` } : {}),
      ...(va.spec?.modelID ? { modelID: va.spec.modelID } : {}),
      conditions: (va.status?.conditions ?? []).map(cleanCondition),
      ...(d ? { decision: { ...d, reason: redactUrl(d.reason) } } : {}),
      ...(alloc ? { optimized: { replicas: alloc.numReplicas, lastRunTime: alloc.lastRunTime } } : {}),
    };
  });
  return { ...page, items };
}

/**
 * Pods inside a PodOpsLifecycle operation or held by a protection finalizer, from one page of the Pods
 * that take part in the lifecycle (a label selector the API server applies): a page may hold fewer
 * than `limit`, even none, and still have a `continue`.
 */
export async function podOperationPage(s: ObjectSources, q: PageQuery): Promise<Page<PodOperationView>> {
  const page = await listPage(s, Resources.pod, q, podSchema, { labelSelector: s.podSelector });
  const items: PodOperationView[] = [];
  for (const pod of page.items) {
    const op = s.podOperation({ labels: pod.metadata.labels ?? {}, finalizers: pod.metadata.finalizers ?? [] });
    if (!op) continue;
    items.push({ namespace: pod.metadata.namespace ?? '', name: pod.metadata.name, ...(pod.status?.phase ? { podPhase: pod.status.phase } : {}), deleting: Boolean(pod.metadata.deletionTimestamp), ...op });
  }
  return { ...page, items };
}

export interface FailedReconcile {
  key: string;
  error: string;
  /** When the reconcile failed (ms since the epoch). */
  failedAt?: number;
  /** Consecutive failures of the key so far; 0 once it stopped being retried (a terminal error, or reconciled since). */
  attempt: number;
  /** When the key runs next: a time (ms), 'now' (waiting or running), or undefined (nothing scheduled). */
  nextRetry?: number | 'now';
}

export interface FunctionFailures {
  function: string;
  failed: FailedReconcile[];
}

/** BullMQ's delayed set scores a job by `timestamp * 0x1000 + counter` (bullmq's delayed ordering). */
const DELAY_SCORE_FACTOR = 0x1000;

/**
 * The most recent failed reconciles of each function, newest first, one row per key: the error its job
 * failed with, how many times in a row it has failed (the queue's per-key failure count, which drives the
 * backoff) and when the key runs again (its pending job). At most `limit` failed jobs are read per queue,
 * and three Redis reads per key.
 */
export async function recentFailures(queues: WorkQueue[], limit: number): Promise<FunctionFailures[]> {
  return Promise.all(
    queues.map(async (q): Promise<FunctionFailures> => {
      const jobs = await q.bull.getFailed(0, limit - 1);
      const seen = new Set<string>();
      const latest = jobs
        .filter((j) => j !== undefined && j !== null)
        .sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0))
        .filter((j) => {
          const key = z.object({ key: z.string() }).safeParse(j.data).data?.key;
          if (key === undefined || seen.has(key)) return false;
          seen.add(key);
          return true;
        });
      const redis = q.connection;
      const failed = await Promise.all(
        latest.map(async (j): Promise<FailedReconcile> => {
          const key = (j.data as { key: string }).key;
          const [failures, pending] = await Promise.all([redis.hget(q.keys.failures, key), redis.hget(q.keys.pending, key)]);
          let nextRetry: FailedReconcile['nextRetry'];
          if (pending) {
            const score = await redis.zscore(q.bull.keys.delayed ?? `${q.keys.jobKeyPrefix}delayed`, pending);
            nextRetry = score !== null ? Math.floor(Number(score) / DELAY_SCORE_FACTOR) : 'now';
          } else if (await redis.hexists(q.keys.active, key)) nextRetry = 'now';
          return {
            key,
            error: redactUrl(j.failedReason ?? ''),
            ...(j.finishedOn ? { failedAt: j.finishedOn } : {}),
            attempt: Number(failures ?? 0),
            ...(nextRetry !== undefined ? { nextRetry } : {}),
          };
        }),
      );
      return { function: q.name, failed };
    }),
  );
}
