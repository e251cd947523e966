/**
 * Target resolution (seed 003): does the Deployment a VA names exist? When it does not, the VA says
 * so at once and everything derived from the old Deployment is cleared.
 */
import {
  ConditionType,
  MetricsAvailableReason,
  OptimizationReadyReason,
  TargetResolvedReason,
  type VariantAutoscaling,
} from '../../../api/variantautoscaling.js';
import type { ConditionInput } from '../../../status/conditions.js';
import { apiVersionOf } from '../../../kube/resources.js';
import type { DeploymentFacts } from './deployment-facts.js';
import { SUPPORTED_KINDS_TEXT, TARGET_KINDS, targetKindOf } from './kinds.js';

export interface TargetResolution {
  found: boolean;
  /** The TargetResolved condition. */
  condition: ConditionInput;
  /** Set when the target is gone: what to write instead of the stale values. */
  cleared?: {
    metricsAvailable: ConditionInput;
    optimizationReady: ConditionInput;
    currentReplicas: 0;
    /** Remove this VA's exported metric series. */
    removeMetrics: true;
    /** For the unified status model's Ready condition (seed 003, example 3). */
    ready: ConditionInput;
  };
}

/** Deployments, StatefulSets, LeaderWorkerSets and ModelServings (target/kinds.ts). */
export function isSupportedTarget(ref: VariantAutoscaling['spec']['scaleTargetRef']): boolean {
  return targetKindOf(ref) !== undefined;
}

/**
 * Problems with scaleTargetRef the CRD cannot reject but that can never work, each naming the field
 * (for ConfigValid=False). Empty when the reference is usable.
 */
export function targetSpecProblems(ref: VariantAutoscaling['spec']['scaleTargetRef']): string[] {
  const problems: string[] = [];
  const kind = TARGET_KINDS.find((k) => k.kind === ref.kind);
  if (kind === undefined) problems.push(`spec.scaleTargetRef.kind: ${JSON.stringify(ref.kind)} is not supported: the autoscaler scales ${SUPPORTED_KINDS_TEXT}`);
  else if (ref.apiVersion !== undefined && ref.apiVersion !== '' && ref.apiVersion !== apiVersionOf(kind.resource)) {
    problems.push(`spec.scaleTargetRef.apiVersion: ${JSON.stringify(ref.apiVersion)} is not supported: use "${apiVersionOf(kind.resource)}" or leave it out`);
  }
  return problems;
}

function notFound(message: string, kind: string, name: string): TargetResolution {
  return {
    found: false,
    condition: { type: ConditionType.TargetResolved, status: 'False', reason: TargetResolvedReason.TargetNotFound, message },
    cleared: {
      metricsAvailable: {
        type: ConditionType.MetricsAvailable,
        status: 'False',
        reason: MetricsAvailableReason.MetricsMissing,
        message: `No metrics: scale target ${kind} ${name} is gone`,
      },
      optimizationReady: {
        type: ConditionType.OptimizationReady,
        status: 'False',
        reason: OptimizationReadyReason.MetricsUnavailable,
        message: `Not optimized until scale target ${kind} ${name} exists`,
      },
      currentReplicas: 0,
      removeMetrics: true,
      ready: { type: 'Ready', status: 'False', reason: 'DeploymentNotFound', message },
    },
  };
}

/**
 * `deployment` is the Deployment named by `spec.scaleTargetRef` in the VA's namespace, or undefined
 * when the API server has none.
 */
export function resolveTarget(va: Pick<VariantAutoscaling, 'spec'>, deployment: DeploymentFacts | undefined): TargetResolution {
  const ref = va.spec.scaleTargetRef;
  if (!isSupportedTarget(ref)) {
    return notFound(`Scale target ${ref.kind} ${ref.name} not supported: scaleTargetRef must name one of ${SUPPORTED_KINDS_TEXT}`, ref.kind, ref.name);
  }
  if (deployment === undefined || deployment.name !== ref.name || deployment.kind !== ref.kind) {
    return notFound(`Scale target ${ref.kind} ${ref.name} not found`, ref.kind, ref.name);
  }
  if (deployment.deleting) {
    return notFound(`Scale target ${ref.kind} ${ref.name} not found: it is being deleted`, ref.kind, ref.name);
  }
  const via = ref.kind === 'Deployment' ? '' : ' (scaled through its scale subresource)';
  return {
    found: true,
    condition: { type: ConditionType.TargetResolved, status: 'True', reason: TargetResolvedReason.TargetFound, message: `Scale target ${ref.kind} ${ref.name} found${via}` },
  };
}

/**
 * The VAs to reconcile when a Deployment is created or deleted: those in its namespace whose
 * scaleTargetRef names it. Returned as `namespace/name` keys, sorted.
 */
export function vasTargetingDeployment(
  vas: readonly Pick<VariantAutoscaling, 'metadata' | 'spec'>[],
  deployment: { namespace: string; name: string },
): string[] {
  return vas
    .filter((va) => va.metadata.namespace === deployment.namespace && va.spec.scaleTargetRef.kind === 'Deployment' && isSupportedTarget(va.spec.scaleTargetRef) && va.spec.scaleTargetRef.name === deployment.name)
    .map((va) => `${va.metadata.namespace ?? ''}/${va.metadata.name ?? ''}`)
    .sort();
}
