/**
 * Shared steps of the autoscaler's integration tests: real objects on the sandbox API server, real
 * Redis, and (where a test needs it) a real Prometheus scraping the vLLM emitter.
 */
import { AppsV1Api } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { variantAutoscalingStatusSchema, type VariantAutoscalingStatus } from '../../api/variantautoscaling.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../../kube/resources.js';
import { definition } from '../../functions/reconcile-autoscaler/definition.js';
import type { FunctionDefinition, ReconcileRequest } from '../../runtime/function.js';
import type { VllmEmitter } from '../fixtures/vllm-emitter.js';
import { waitFor, type TestSandbox } from '../harness/sandbox.js';

/** The environment the function runs with in a test: its ConfigMaps live in the test's namespace. */
export function autoscalerEnv(sb: TestSandbox, extra: Record<string, string> = {}): Record<string, string> {
  return { POD_NAMESPACE: sb.namespace, RIPPLE_WATCH_NAMESPACE: sb.namespace, ...extra };
}

export interface RecordedReconcile {
  key: string;
  reason: string;
  at: number;
}

/** The autoscaler's definition with every reconcile recorded (instrumentation only; the handler runs as is). */
export function recordedDefinition(env: Record<string, string>): { def: FunctionDefinition; calls: RecordedReconcile[] } {
  const base = definition({ ...process.env, ...env });
  const calls: RecordedReconcile[] = [];
  return {
    calls,
    def: {
      ...base,
      reconcile: (req: ReconcileRequest, ctx) => {
        calls.push({ key: req.key, reason: req.reason, at: Date.now() });
        return base.reconcile(req, ctx);
      },
    },
  };
}

export async function createDeployment(sb: TestSandbox, name: string, replicas: number): Promise<void> {
  await sb.kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
    namespace: sb.namespace,
    body: {
      metadata: { name },
      spec: {
        replicas,
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'vllm', image: 'vllm/vllm-openai:latest' }] } },
      },
    },
  });
}

export async function deleteDeployment(sb: TestSandbox, name: string): Promise<void> {
  await sb.kc.makeApiClient(AppsV1Api).deleteNamespacedDeployment({ name, namespace: sb.namespace });
}

export async function scaleDeployment(sb: TestSandbox, name: string, replicas: number): Promise<void> {
  await kubeRequest(sb.kc, objectPath(Resources.deployment, sb.namespace, name), {
    method: 'PATCH',
    body: { spec: { replicas } },
    contentType: 'application/merge-patch+json',
  });
}

export interface VaOptions {
  target?: string;
  model: string;
  cost?: string;
  accelerator?: string;
  kind?: string;
}

export async function createVA(sb: TestSandbox, name: string, o: VaOptions): Promise<void> {
  await kubeRequest(sb.kc, collectionPath(Resources.variantAutoscaling, sb.namespace), {
    method: 'POST',
    body: {
      apiVersion: 'llmd.ai/v1alpha1',
      kind: 'VariantAutoscaling',
      metadata: { name, labels: { 'inference.optimization/acceleratorName': o.accelerator ?? 'A100' } },
      spec: {
        scaleTargetRef: { kind: o.kind ?? 'Deployment', name: o.target ?? name },
        modelID: o.model,
        ...(o.cost !== undefined ? { variantCost: o.cost } : {}),
      },
    },
  });
}

const vaReadSchema = z.object({
  metadata: z.object({ name: z.string(), generation: z.number().optional(), resourceVersion: z.string() }),
  spec: z.object({ variantCost: z.string().optional() }).passthrough(),
  status: variantAutoscalingStatusSchema.optional(),
});
export type VaRead = z.infer<typeof vaReadSchema>;

export async function readVA(sb: TestSandbox, name: string): Promise<VaRead> {
  return vaReadSchema.parse(await kubeRequest(sb.kc, objectPath(Resources.variantAutoscaling, sb.namespace, name)));
}

export function condition(status: VariantAutoscalingStatus | undefined, type: string): { status: string; reason: string; message: string } | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

/** Waits until the VA's condition has this status (and reason, when given); returns the VA. */
export async function waitForCondition(sb: TestSandbox, name: string, type: string, status: string, reason?: string, timeoutMs = 30_000): Promise<VaRead> {
  let last: ReturnType<typeof condition>;
  try {
    return await waitFor(`${name} ${type}=${status}${reason ? `/${reason}` : ''}`, timeoutMs, async () => {
      const va = await readVA(sb, name);
      const c = (last = condition(va.status, type));
      return c?.status === status && (reason === undefined || c.reason === reason) ? va : undefined;
    });
  } catch (err) {
    // The condition as it stands says why (which kind, what is missing), not only that time ran out.
    throw new Error(`${err instanceof Error ? err.message : String(err)} (last ${type}: ${JSON.stringify(last)})`, { cause: err });
  }
}

export async function desiredReplicas(sb: TestSandbox, name: string): Promise<number | undefined> {
  return (await readVA(sb, name)).status?.desiredOptimizedAlloc?.numReplicas;
}

/** Names of the Deployment's pods that are Running (KWOK marks them so). */
export async function runningPods(sb: TestSandbox, deployment: string): Promise<string[]> {
  return runningPodsMatching(sb, `app=${deployment}`);
}

/** Names of the Running pods a label selector (as a scale subresource's `status.selector` writes it) matches. */
export async function runningPodsMatching(sb: TestSandbox, labelSelector: string): Promise<string[]> {
  const pods = await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector });
  return pods.items
    .filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp)
    .map((p) => p.metadata?.name ?? '')
    .sort();
}

/** Waits for the Deployment's pods to be Running and gives each the load (they report as vLLM pods would). */
export async function loadPods(sb: TestSandbox, emitter: VllmEmitter, deployment: string, model: string, replicas: number, load: { kvCacheUsage: number; waiting: number }): Promise<string[]> {
  const pods = await waitFor(`${replicas} running pod(s) of ${deployment}`, 60_000, async () => {
    const names = await runningPods(sb, deployment);
    return names.length === replicas ? names : undefined;
  }, 250);
  for (const pod of pods) emitter.set(sb.namespace, model, pod, load);
  return pods;
}

export async function upsertConfigMap(sb: TestSandbox, name: string, data: Record<string, string>): Promise<void> {
  try {
    await sb.core.replaceNamespacedConfigMap({ name, namespace: sb.namespace, body: { metadata: { name }, data } });
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name }, data } });
  }
}

/** One value of a metric in the registry's text exposition, or undefined when the series is absent. */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await registry.metrics();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const body = line.slice(name.length + 1, line.lastIndexOf('}'));
    const got = Object.fromEntries([...body.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}
