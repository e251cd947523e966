/**
 * One VariantAutoscaling: read it and its scale target (target/read.ts) fresh, take the latest cycle's decision from
 * Redis, publish its gauges, and write its status (WVA's conditions and fields beside the unified
 * model) only when something changed, with the resourceVersion read.
 */
import { ACCELERATOR_NAME_LABEL, parseVariantAutoscaling, variantAutoscalingStatusSchema, type VariantAutoscalingStatus } from '../../api/variantautoscaling.js';
import { kubeObjectSchema } from '../../kube/object.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import type { HandlerContext, ReconcileRequest, ReconcileResult } from '../../runtime/function.js';
import { writeStatus, type StatusOwner } from '../../status/write.js';
import { autoscalerNames } from './config/names.js';
import { FUNCTION_NAME, OPTIMIZE_KEY, stateKeys } from './keys.js';
import { belongsToInstance, inactiveStillApplies, UNRESOLVED_ACCELERATOR } from './saturation/active-variants.js';
import type { VariantDecision } from './saturation/decision.js';
import { forgetVariant, publishSeries, readDecision, readInactive, seriesExpired, unpublishSeries, type InactiveRecord } from './state.js';
import { variantStatusWrite } from './status/va-status.js';
import { readTarget } from './target/read.js';
import { resolveTarget, targetSpecProblems } from './target/resolve.js';

export async function reconcileVariant(req: ReconcileRequest, ctx: HandlerContext): Promise<ReconcileResult | void> {
  const namespace = req.namespace ?? '';
  let raw: unknown;
  try {
    raw = await kubeRequest(ctx.kc, objectPath(Resources.variantAutoscaling, namespace, req.name));
  } catch (err) {
    if (isStatus(err, 404)) {
      // Deleted (VA Delete events are blocked; the tick brings us here): nothing of it may stay exported.
      await forgetVariant(ctx, req.key);
      return;
    }
    throw err;
  }
  const object = kubeObjectSchema.parse(raw);
  if (object.metadata.deletionTimestamp) return;
  const names = autoscalerNames(ctx.env).names;
  if (!belongsToInstance(object, names.controllerInstance)) {
    // Moved to another controller instance (or never ours): nothing of it may stay exported here,
    // or an HPA summing over instances would count it twice (issue 14 scenario 4).
    await forgetVariant(ctx, req.key);
    return;
  }

  const owner: StatusOwner = { metadata: { ...object.metadata, namespace }, status: object['status'] };
  const write = (args: Omit<Parameters<typeof writeStatus>[1], 'resource' | 'object' | 'source'>) =>
    writeStatus(ctx, { resource: Resources.variantAutoscaling, object: owner, source: FUNCTION_NAME, ...args });

  // The spec alone decides validity: a status some other writer garbled must not fail the VA.
  const parsed = parseVariantAutoscaling({ ...object, status: undefined });
  if (!parsed.ok) {
    await write({ input: { errors: parsed.errors.map((message) => ({ class: 'Spec' as const, message })) } });
    ctx.log.warn({ problems: parsed.errors }, 'invalid VariantAutoscaling; not retried until its spec changes');
    return;
  }
  const va = parsed.value;
  const previousStatus: VariantAutoscalingStatus | undefined = variantAutoscalingStatusSchema.safeParse(object['status']).data;
  const ref = va.spec.scaleTargetRef;
  const specErrors = targetSpecProblems(ref);
  const deployment = specErrors.length === 0 ? await readTarget(ctx, namespace, ref) : undefined;
  const target = resolveTarget(va, deployment);

  let decision: VariantDecision | undefined;
  let actuationApplied: boolean | undefined;
  let inactive: InactiveRecord | undefined;
  if (!target.found) {
    // Seed 003 example 3: metrics cleared at once, and no stale decision re-applied if the Deployment returns.
    await forgetVariant(ctx, req.key);
  } else if (deployment) {
    decision = await readDecision(ctx.redis, ctx.prefix, req.key);
    // A decision for another target (scaleTargetRef edited, or the Deployment recreated since the
    // cycle), or one no cycle confirmed for a while, does not apply.
    const now = ctx.now();
    if (decision && (decision.variantName !== ref.name || (decision.targetUid !== undefined && decision.targetUid !== deployment.uid) || seriesExpired(decision, now))) {
      decision = undefined;
    }
    if (!decision) {
      inactive = await readInactive(ctx.redis, ctx.prefix, req.key);
      if (inactive && !inactiveStillApplies(inactive.reason, deployment)) inactive = undefined;
    }
    if (decision) {
      await publishSeries(ctx, req.key, {
        variantName: ref.name,
        namespace,
        accelerator: decision.accelerator,
        current: deployment.currentReplicas,
        desired: decision.desiredReplicas,
        ...(decision.validUntil !== undefined ? { validUntil: decision.validUntil } : {}),
      });
      actuationApplied = true;
      // What the Deployment has now, not what it had when the cycle ran.
      decision = { ...decision, currentReplicas: deployment.currentReplicas };
    } else if (inactive?.reason === 'target-scaled-to-zero') {
      // At 0 replicas (by hand, or by scale-to-zero and the HPA): its old desired must not bring it
      // back (issue 14 scenario 3), and no series at all would make KEDA fall back to its fallback
      // replicas. Desired 0 keeps it where it is.
      await publishSeries(ctx, req.key, {
        variantName: ref.name,
        namespace,
        // The cycle's choice first, so the two writers of this series never disagree on its labels.
        accelerator: inactive.accelerator ?? va.metadata.labels?.[ACCELERATOR_NAME_LABEL] ?? previousStatus?.desiredOptimizedAlloc?.accelerator ?? UNRESOLVED_ACCELERATOR,
        current: deployment.currentReplicas,
        desired: 0,
      });
    } else {
      // Left out of the last cycle (a duplicate), or not decided yet: nothing is published for HPA/KEDA.
      await unpublishSeries(ctx, req.key);
      if (inactive === undefined) await requestFirstCycle(ctx, req.key, deployment.uid);
    }
  }

  const result = await write(
    variantStatusWrite({
      previous: previousStatus,
      specErrors,
      target,
      ...(decision !== undefined ? { decision } : {}),
      ...(actuationApplied !== undefined ? { actuationApplied } : {}),
      ...(inactive !== undefined && deployment !== undefined ? { inactive: { reason: inactive.reason, message: inactive.message, currentReplicas: deployment.currentReplicas } } : {}),
    }),
  );
  if (result.written) ctx.log.debug({ phase: result.status.phase, target: target.found, desired: decision?.desiredReplicas }, 'status written');
  if (result.terminal) {
    ctx.log.warn({ problems: specErrors }, 'VariantAutoscaling cannot work as written; not retried until its spec changes');
    return;
  }
  if (result.requeueAfterMs !== undefined) return { requeueAfterMs: result.requeueAfterMs };
}

/**
 * Seed 003 example 2, "no 60 s wait": a VA whose Deployment appeared (or that was created for one
 * that exists) asks for a cycle now instead of waiting for the tick. Once per VA and Deployment uid
 * for a while, so a VA no cycle can decide (its namespace unreadable) never loops.
 */
const CYCLE_REQUEST_TTL_SECONDS = 600;
async function requestFirstCycle(ctx: HandlerContext, vaKey: string, targetUid: string): Promise<void> {
  const first = await ctx.redis.set(stateKeys(ctx.prefix).cycleRequested(vaKey, targetUid), '1', 'EX', CYCLE_REQUEST_TTL_SECONDS, 'NX');
  if (first !== 'OK') return;
  ctx.log.debug({ va: vaKey }, 'no decision yet for this Deployment: asking for a cycle now');
  await ctx.enqueue(FUNCTION_NAME, OPTIMIZE_KEY);
}
