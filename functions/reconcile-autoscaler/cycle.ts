/**
 * The optimization cycle (the `@optimize` key, enqueued by every resync tick): read the VAs and their
 * Deployments, ask Prometheus about every model group, decide with the pure engine, hand each VA its
 * decision through Redis, and enqueue every VA so whichever worker takes it writes its status and
 * publishes its gauges. Because the key is on the keyed queue, one cycle runs at a time across all
 * workers.
 */
import { AppsV1Api, CoreV1Api, type V1Deployment } from '@kubernetes/client-node';
import { parseVariantAutoscaling, type VariantAutoscaling } from '../../api/variantautoscaling.js';
import { listSchema } from '../../kube/object.js';
import { kubeRequest } from '../../kube/raw.js';
import { collectionPath, Resources } from '../../kube/resources.js';
import type { HandlerContext } from '../../runtime/function.js';
import { redactUrl } from '../../base/redact.js';
import { whileClaimed } from '../../base/reconcile-scope.js';
import { effectivePrometheusSettings } from './config/controller-config.js';
import { describeIssue } from './config/issues.js';
import { autoscalerNames, type AutoscalerNames } from './config/names.js';
import { saturationThresholdsFor, V2_ANALYZER_NAME } from './config/saturation-config.js';
import { scaleToZeroPolicyFor } from './config/scale-to-zero-config.js';
import type { StoredConfig } from './config/stored.js';
import { withPrometheusSecrets, type PrometheusSecrets } from './config/stored-secrets.js';
import { namespaceSaturation, refreshConfig } from './config-store.js';
import { mergeAnnotatedVariants, type AnnotatedVariant } from './discovery/annotations.js';
import { listAnnotatedVariants } from './discovery/list.js';
import { annotatedVariantKey, FUNCTION_NAME, isAnnotatedKey } from './keys.js';
import { mapBounded } from './bounded.js';
import { listPerNamespace } from './per-namespace.js';
import { prometheusClient, type PrometheusClient } from './prometheus/client.js';
import { collectGroupInputs, collectPendingRequests } from './prometheus/collect.js';
import { selectActiveVariants, type VariantCandidate } from './saturation/active-variants.js';
import type { VariantDecision } from './saturation/decision.js';
import { cycleStamp, decideCycle, type GroupInputs } from './saturation/engine.js';
import { planScaleFromZero, type PendingRequests } from './saturation/from-zero.js';
import { gpuCapacityByType } from './saturation/inventory.js';
import { cycleObservations } from './metrics/cycle-observations.js';
import { COMPONENT, counterIncrement, ERROR_TYPE, histogramIncrements, OPERATOR_METRIC } from './metrics/operator-metrics.js';
import { variantNameLabelValue } from './metrics/series.js';
import { publishSeriesBatch, readAllDecisions, storeCycleDecisions, storeCycleRecord, storeOperatorMetrics, type CycleRecord } from './state.js';
import { deploymentFacts, type DeploymentFacts } from './target/deployment-facts.js';
import { targetKindOf } from './target/kinds.js';
import { readScaledTarget } from './target/read.js';
import { labelSelectorQuery, mapPodsToVariants, type PodRef } from './target/selector.js';
import { ensureTickInterval } from './tick.js';

/** The namespace the host is confined to (ripple's RIPPLE_WATCH_NAMESPACE); undefined: all. */
export function watchNamespace(env: HandlerContext['env']): string | undefined {
  const ns = env['RIPPLE_WATCH_NAMESPACE'];
  return ns ? ns : undefined;
}

async function listVariantAutoscalings(ctx: HandlerContext, namespace: string | undefined): Promise<{ valid: VariantAutoscaling[]; allKeys: string[] }> {
  const valid: VariantAutoscaling[] = [];
  const allKeys: string[] = [];
  let cont: string | undefined;
  do {
    const page = listSchema.parse(await kubeRequest(ctx.kc, collectionPath(Resources.variantAutoscaling, namespace), { query: { limit: 500, continue: cont } }));
    for (const item of page.items) {
      allKeys.push(`${item.metadata.namespace ?? ''}/${item.metadata.name}`);
      // An invalid VA takes no part; its own reconcile reports ConfigValid=False.
      const parsed = parseVariantAutoscaling(item);
      if (parsed.ok) valid.push(parsed.value);
    }
    cont = page.metadata.continue || undefined;
  } while (cont);
  return { valid, allKeys };
}

function prometheusFor(config: StoredConfig, secrets: PrometheusSecrets, env: HandlerContext['env']): Promise<PrometheusClient | { unavailable: string }> {
  // PROMETHEUS_URL is Ripple's short name for WVA's PROMETHEUS_BASE_URL environment variable.
  const merged = { ...env, PROMETHEUS_BASE_URL: env['PROMETHEUS_BASE_URL'] || env['PROMETHEUS_URL'] };
  const controller = { ...config.controller, prometheus: withPrometheusSecrets(config.controller.prometheus, secrets) };
  const { settings, issues } = effectivePrometheusSettings(controller, merged);
  if (issues.length > 0) return Promise.resolve({ unavailable: issues.map(describeIssue).join('; ') });
  const baseUrl = settings.baseUrl;
  if (baseUrl === undefined) {
    return Promise.resolve({ unavailable: 'Prometheus is not configured: set PROMETHEUS_BASE_URL in the controller ConfigMap or PROMETHEUS_URL in the environment' });
  }
  // These messages become the VAs' MetricsAvailable condition and the last-cycle record.
  return prometheusClient({ ...settings, baseUrl }).catch((err: unknown) => ({ unavailable: redactUrl(`Prometheus TLS settings unusable: ${err instanceof Error ? err.message : String(err)}`) }));
}

/** Prometheus queries (three per model) in flight at once: a cycle over many models must not flood it. */
export const PROMETHEUS_CONCURRENCY = 4;
/** Pod lists (one per Deployment, by its selector) in flight at once. */
const POD_LIST_CONCURRENCY = 4;
/** A decision not confirmed by this many cycles is no longer published... */
export const DECISION_TTL_INTERVALS = 3;
/**
 * ...and not before this long, whatever the interval. A cycle runs through the queue, its Prometheus
 * queries and the VA reconciles that publish its decisions, which on a busy worker can take several
 * seconds; with a short GLOBAL_OPT_INTERVAL three intervals are shorter than that, and a series that
 * expires between two healthy cycles reads as empty to KEDA and the HPA (seen with a 2 s interval:
 * KEDA's metrics server served 0 for a Deployment whose decision was 1).
 */
export const DECISION_TTL_MIN_MS = 30_000;

/** How long a decision made now stays published without a cycle confirming it. */
export function decisionTtlMs(intervalMs: number): number {
  return Math.max(DECISION_TTL_INTERVALS * intervalMs, DECISION_TTL_MIN_MS);
}
/**
 * A Deployment this young whose pods report no metrics yet is looked at again this soon, not at the
 * next tick: its first decision and Ready come as soon as its pods report (issue 14 scenario 1).
 */
export const YOUNG_TARGET_MS = 5 * 60_000;
export const FIRST_METRICS_RECHECK_MS = 5_000;
/** While a model sits at zero and its inference gateway is scraped, the cycle runs this often. */
export const SCALE_FROM_ZERO_RECHECK_MS = 5_000;

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * `reason`: why the `@optimize` key runs. A tick (or anything else) visits every VA afterwards, as the
 * function's resync; the quick re-checks (`requeue`) and a cycle a VA asked for (`handler`) visit only
 * the VAs whose decision changed, so they add no churn for the others.
 */
export async function runCycle(ctx: HandlerContext, reason = 'resync'): Promise<{ requeueAfterMs: number } | void> {
  const started = performance.now();
  try {
    return await cycle(ctx, reason, started);
  } catch (err) {
    // wva_optimization_duration_seconds{status="error"}: best effort (a cycle that lost its claim cannot write).
    const seconds = (performance.now() - started) / 1000;
    await storeOperatorMetrics(ctx, undefined, [
      ...histogramIncrements(OPERATOR_METRIC.optimizationDuration, { status: 'error' }, seconds),
      counterIncrement(OPERATOR_METRIC.errors, { component: COMPONENT.controller, error_type: ERROR_TYPE.cycle }),
    ]).catch(() => undefined);
    throw err;
  }
}

async function cycle(ctx: HandlerContext, reason: string, started: number): Promise<{ requeueAfterMs: number } | void> {
  const { names, problems } = autoscalerNames(ctx.env);
  for (const p of problems) ctx.log.warn(p);
  const namespace = watchNamespace(ctx.env);
  const { valid, allKeys } = await listVariantAutoscalings(ctx, namespace);
  // Variants found on annotated HPAs and ScaledObjects (current WVA's discovery), beside the VAs; a VA
  // naming the same target wins (seed 003's resource stays the spec).
  const merged = mergeAnnotatedVariants(valid, await listAnnotatedVariants(ctx, namespace));
  for (const s of merged.shadowed) ctx.log.info({ scaler: `${s.variant.source.kind} ${s.variant.source.namespace}/${s.variant.source.name}`, by: s.by }, 'annotated scaler left out: its target is already autoscaled');
  const annotated = new Map<string, AnnotatedVariant>(merged.variants.map((v) => [annotatedVariantKey(v.source.namespace, v.source.name, v.source.kind), v]));
  const existingKeys = new Set([...allKeys, ...annotated.keys()]);
  const all = [...valid.map((va) => ({ va, key: `${va.metadata.namespace ?? ''}/${va.metadata.name ?? ''}` })), ...[...annotated].map(([key, v]) => ({ va: v.va, key }))];
  // The variants' namespaces: their namespace-local saturation ConfigMaps are read too.
  const { config, prometheusSecrets } = await refreshConfig(ctx, names, all.map((v) => v.va.metadata.namespace ?? ''));
  const intervalMs = config.controller.globalOptIntervalMs;
  await ensureTickInterval(ctx, intervalMs);
  const apps = ctx.kc.makeApiClient(AppsV1Api);
  const core = ctx.kc.makeApiClient(CoreV1Api);

  // Deployments of the namespaces that have VAs: one list each, not one read per VA. A namespace that
  // cannot be listed leaves its VAs out of this cycle (their last decisions stand) instead of
  // aborting the cycle for every model (issue 14 scenario 9).
  const namespaces = [...new Set(all.map((v) => v.va.metadata.namespace ?? ''))].sort();
  const listed = await listPerNamespace(namespaces, async (namespace) => (await whileClaimed(`list Deployments in ${namespace}`, () => apps.listNamespacedDeployment({ namespace }))).items);
  const deployments = new Map<string, V1Deployment>();
  for (const [ns, items] of listed.items) for (const d of items) deployments.set(`${ns}/${d.metadata?.name ?? ''}`, d);
  const unreadable = new Map<string, string>(listed.failed);
  // Targets of the other kinds (StatefulSet, LeaderWorkerSet, ModelServing): each read with its scale
  // subresource. One that cannot be read leaves its namespace out of the cycle, as a failed list does.
  const scaled = new Map<string, DeploymentFacts>();
  const others = all.map((v) => v.va).filter((va) => va.spec.scaleTargetRef.kind !== 'Deployment' && !unreadable.has(va.metadata.namespace ?? ''));
  await mapBounded(others, POD_LIST_CONCURRENCY, async (va) => {
    const ns = va.metadata.namespace ?? '';
    const kind = targetKindOf(va.spec.scaleTargetRef);
    if (kind === undefined) return;
    try {
      const facts = await readScaledTarget(ctx, kind, ns, va.spec.scaleTargetRef.name);
      if (facts) scaled.set(`${ns}/${kind.kind}/${facts.name}`, facts);
    } catch (err) {
      unreadable.set(ns, errorText(err));
    }
  });
  const targetOf = (ns: string, ref: VariantAutoscaling['spec']['scaleTargetRef']): DeploymentFacts | undefined => {
    if (ref.kind !== 'Deployment') return scaled.get(`${ns}/${ref.kind}/${ref.name}`);
    const d = deployments.get(`${ns}/${ref.name}`);
    return d ? deploymentFacts(d) : undefined;
  };
  const { decisions: previous, keys: storedDecisionKeys } = await readAllDecisions(ctx.redis, ctx.prefix);
  const candidates: VariantCandidate[] = all
    .filter(({ va }) => !unreadable.has(va.metadata.namespace ?? ''))
    .map(({ va, key }) => {
      const p = previous.get(key);
      return { va, key, deployment: targetOf(va.metadata.namespace ?? '', va.spec.scaleTargetRef), ...(p ? { previous: { desiredReplicas: p.desiredReplicas, targetUid: p.targetUid } } : {}) };
    });
  const targetByVa = new Map(candidates.map((c) => [c.key ?? '', c.deployment]));
  const { groups, inactive: leftOut, atZero } = selectActiveVariants(candidates, names.controllerInstance !== undefined ? { controllerInstance: names.controllerInstance } : {});

  // Each target's pods by its own selector (a Deployment's spec.selector, another kind's scale
  // subresource's), not every pod of the namespace.
  const podVariantByNs = new Map<string, Map<string, string>>();
  for (const ns of [...new Set(groups.map((g) => g.namespace))]) {
    const variants = groups
      .filter((g) => g.namespace === ns)
      .flatMap((g) => g.variants)
      .map((v) => ({ variantName: v.variantName, selector: targetByVa.get(v.key)?.selector }));
    const pods = new Map<string, PodRef>();
    try {
      const lists = await mapBounded(variants, POD_LIST_CONCURRENCY, async (v) => {
        const labelSelector = labelSelectorQuery(v.selector);
        return labelSelector === undefined ? [] : (await whileClaimed(`list pods in ${ns}`, () => core.listNamespacedPod({ namespace: ns, labelSelector }))).items;
      });
      for (const p of lists.flat()) {
        const name = p.metadata?.name ?? '';
        const rs = p.metadata?.ownerReferences?.find((o) => o.controller === true && o.kind === 'ReplicaSet')?.name;
        pods.set(name, { name, labels: p.metadata?.labels ?? {}, ...(rs !== undefined ? { replicaSet: rs } : {}) });
      }
    } catch (err) {
      // Without its pods no variant of the namespace can be matched: its models count as having no metrics.
      unreadable.set(ns, errorText(err));
    }
    podVariantByNs.set(ns, mapPodsToVariants([...pods.values()], variants));
  }

  const prometheus = await prometheusFor(config, prometheusSecrets, ctx.env);
  const policyFor = (modelID: string, ns: string) => scaleToZeroPolicyFor(config.scaleToZero, modelID, ns, config.controller.scaleToZero);
  const inputs: Record<string, GroupInputs> = {};
  await mapBounded(groups, PROMETHEUS_CONCURRENCY, async (g) => {
    const v2 = saturationThresholdsFor(namespaceSaturation(config)[g.namespace] ?? config.saturation, g.modelID, g.namespace).thresholds.analyzerName === V2_ANALYZER_NAME;
    inputs[g.key] = await collectGroupInputs(prometheus, g, podVariantByNs.get(g.namespace) ?? new Map(), policyFor(g.modelID, g.namespace), config.controller.metricsFreshness, v2);
  });

  let gpuCapacity: Record<string, number> | undefined;
  if (config.saturation.default.enableLimiter && groups.length > 0) {
    const nodes = (await whileClaimed('list nodes', () => core.listNode())).items;
    gpuCapacity = gpuCapacityByType(
      nodes.map((n) => ({ labels: n.metadata?.labels ?? {}, allocatable: n.status?.allocatable ?? {}, unschedulable: n.spec?.unschedulable === true })),
    );
  }

  const now = ctx.now();
  const result = decideCycle(groups, inputs, {
    now,
    decisionTtlMs: decisionTtlMs(intervalMs),
    saturation: config.saturation,
    saturationByNamespace: namespaceSaturation(config),
    scaleToZero: policyFor,
    freshness: config.controller.metricsFreshness,
    ...(gpuCapacity !== undefined ? { gpuCapacityByType: gpuCapacity } : {}),
  });

  // Scale from zero (issue 14 scenario 5): models whose every variant is at 0 replicas, woken when
  // requests wait for them in the inference gateway.
  const activeModels = new Set(groups.map((g) => g.key));
  const pending: Record<string, PendingRequests> = {};
  await mapBounded(
    atZero.filter((g) => !activeModels.has(g.key)),
    PROMETHEUS_CONCURRENCY,
    async (g) => {
      pending[g.key] = await collectPendingRequests(prometheus, { namespace: g.namespace, modelID: g.modelID });
    },
  );
  const fromZero = planScaleFromZero(atZero, activeModels, pending, cycleStamp({ now, decisionTtlMs: decisionTtlMs(intervalMs) }));
  const decisions = [...result.decisions, ...fromZero.decisions];
  const woken = new Set(fromZero.decisions.map((d) => d.key));
  const inactive = leftOut.filter((i) => !woken.has(i.key));

  const forgotten = await storeCycleDecisions(ctx, decisions, existingKeys, inactive, now.toISOString(), storedDecisionKeys);
  // An annotated scaler's variant has no object of Ripple's to reconcile: its series are published here.
  await publishAnnotated(ctx, annotated, decisions, previous);

  const record: CycleRecord = {
    at: now.toISOString(),
    intervalMs,
    prometheus: 'unavailable' in prometheus ? prometheus.unavailable : prometheus.displayUrl,
    models: result.models.map((m) => {
      const metrics = inputs[m.key]?.metrics;
      return {
        key: m.key,
        thresholds: m.thresholds,
        ...(m.overrideKey !== undefined ? { overrideKey: m.overrideKey } : {}),
        inTransition: m.inTransition,
        ...(m.step !== undefined ? { step: m.step } : {}),
        ...(m.note !== undefined ? { note: m.note } : {}),
        ...(metrics?.status === 'ok' ? { replicas: metrics.replicas.length } : {}),
      };
    }),
    inactive: inactive.map((i) => ({ key: i.key, reason: i.reason, message: i.message })),
    decisions: decisions.map((d) => ({ key: d.key, desiredReplicas: d.desiredReplicas, source: d.source, reason: d.reason })),
    ...(fromZero.models.length > 0 ? { atZero: fromZero.models.map((m) => ({ key: m.key, pending: pendingText(m.pending), ...(m.woke !== undefined ? { woke: m.woke } : {}) })) } : {}),
    limiter: result.limiter,
    ...(unreadable.size > 0 ? { unreadableNamespaces: Object.fromEntries(unreadable) } : {}),
  };
  await storeCycleRecord(ctx, record);
  logCycle(ctx, names, record, forgotten);

  const observed = cycleObservations({
    groups,
    inputs,
    models: result.models,
    decisions,
    podVariantByNs,
    config: {
      analyzerName: config.saturation.default.analyzerName,
      limiterEnabled: config.saturation.default.enableLimiter,
      scaleToZeroEnabled: config.controller.scaleToZero,
      kvSpareTrigger: config.saturation.default.kvSpareTrigger,
      queueSpareTrigger: config.saturation.default.queueSpareTrigger,
      intervalSeconds: intervalMs / 1000,
    },
    variantNameOf: (vaKey, targetName) => variantNameLabelValue(names.variantNameLabel, vaKey, targetName),
    pendingErrors: Object.values(pending).filter((p) => p.status === 'error').length,
  });
  const seconds = (performance.now() - started) / 1000;
  await storeOperatorMetrics(ctx, observed.gauges, [...observed.increments, ...histogramIncrements(OPERATOR_METRIC.optimizationDuration, { status: 'success' }, seconds)], forgotten);

  // Every VA, valid or not: this is also the function's resync, so a missed event heals within one tick.
  const partial = reason === 'requeue' || reason === 'handler';
  const visit = (partial ? changedKeys(decisions, inactive, previous) : allKeys).filter((k) => !isAnnotatedKey(k));
  for (const key of visit) await ctx.enqueue(FUNCTION_NAME, key);

  // A young Deployment whose pods do not report yet: look again soon rather than at the next tick.
  const young = groups
    .flatMap((g) => g.variants)
    .filter((v) => v.createdAt !== undefined && now.getTime() - Date.parse(v.createdAt) < YOUNG_TARGET_MS)
    .map((v) => v.key);
  const waiting = result.decisions.some((d) => young.includes(d.key) && d.source === 'no-metrics');
  if (waiting && FIRST_METRICS_RECHECK_MS < intervalMs) return { requeueAfterMs: FIRST_METRICS_RECHECK_MS };
  // A model at zero whose gateway is scraped: requests that arrive wait there, so look again soon
  // (WVA's scale-from-zero engine polls every 100 ms; a cycle is heavier, hence seconds).
  if (fromZero.watched && SCALE_FROM_ZERO_RECHECK_MS < intervalMs) return { requeueAfterMs: SCALE_FROM_ZERO_RECHECK_MS };
}

/**
 * The series of the variants found on annotated HPAs and ScaledObjects, from this cycle's decisions (a
 * VA's are published by its own reconcile), and an Event on the HPA or ScaledObject when its desired
 * replicas changed, with upstream's reasons (ScaledUp, ScaledDown, ScaledToZero).
 */
async function publishAnnotated(
  ctx: HandlerContext,
  annotated: ReadonlyMap<string, AnnotatedVariant>,
  decisions: readonly VariantDecision[],
  previous: ReadonlyMap<string, VariantDecision>,
): Promise<void> {
  const mine = decisions.filter((d) => annotated.has(d.key));
  await publishSeriesBatch(
    ctx,
    mine.map((d) => ({
      vaKey: d.key,
      record: { variantName: d.variantName, namespace: d.namespace, accelerator: d.accelerator, current: d.currentReplicas, desired: d.desiredReplicas, ...(d.validUntil !== undefined ? { validUntil: d.validUntil } : {}) },
    })),
  );
  const events = mine.flatMap((d) => {
    const found = annotated.get(d.key);
    const source = found?.source;
    if (source === undefined || d.action === 'no-change' || previous.get(d.key)?.desiredReplicas === d.desiredReplicas) return [];
    const reason = d.action === 'scale-up' ? 'ScaledUp' : d.desiredReplicas === 0 ? 'ScaledToZero' : 'ScaledDown';
    return [{
      involvedObject: { apiVersion: source.apiVersion, kind: source.kind, namespace: source.namespace, name: source.name, ...(source.uid !== undefined ? { uid: source.uid } : {}) },
      type: 'Normal' as const,
      reason,
      message: `desired ${d.desiredReplicas} replica(s) for ${found?.va.spec.scaleTargetRef.kind ?? 'Deployment'} ${d.variantName} (now ${d.currentReplicas}): ${d.reason}`.slice(0, 1024),
      source: FUNCTION_NAME,
    }];
  });
  if (events.length === 0) return;
  try {
    await ctx.events.emitAll(events);
  } catch (err) {
    ctx.log.warn({ err: String(err) }, 'could not queue the scaling Events of annotated scalers');
  }
}

function pendingText(p: PendingRequests): string {
  if (p.status === 'ok') return String(p.pending);
  return p.status === 'none' ? 'no gateway series' : `unknown: ${p.message}`;
}

/** VAs whose decision differs from the one stored before this cycle, and VAs newly left out. */
export function changedKeys(
  decisions: readonly VariantDecision[],
  inactive: ReadonlyArray<{ key: string }>,
  previous: ReadonlyMap<string, VariantDecision>,
): string[] {
  const same = (a: VariantDecision, b: VariantDecision | undefined) =>
    b !== undefined &&
    a.desiredReplicas === b.desiredReplicas &&
    a.accelerator === b.accelerator &&
    a.targetUid === b.targetUid &&
    a.source === b.source &&
    a.metricsAvailable.message === b.metricsAvailable.message &&
    a.optimizationReady.message === b.optimizationReady.message;
  return [...decisions.filter((d) => !same(d, previous.get(d.key))).map((d) => d.key), ...inactive.filter((i) => previous.has(i.key)).map((i) => i.key)];
}

function logCycle(ctx: HandlerContext, names: AutoscalerNames, record: CycleRecord, forgotten: string[]): void {
  for (const i of record.inactive) if (i.reason === 'duplicate-target') ctx.log.warn({ va: i.key }, i.message);
  for (const [namespace, error] of Object.entries(record.unreadableNamespaces ?? {})) {
    ctx.log.warn({ namespace, error }, 'could not read the namespace: its VAs keep their last decisions this cycle');
  }
  ctx.log.info(
    {
      models: record.models.map((m) => ({ model: m.key, inTransition: m.inTransition, step: m.step?.kind, to: m.step?.variantName, note: m.note })),
      decisions: record.decisions.map((d) => `${d.key}=${d.desiredReplicas} (${d.source})`),
      inactive: record.inactive.length,
      forgotten,
      configNamespace: names.namespace,
    },
    'optimization cycle',
  );
}
