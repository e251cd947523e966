import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { generateCrd } from '../../api/crd.js';
import { MODEL_SERVING_CRD } from '../../api/modelserving.js';
import { VARIANT_AUTOSCALING_CRD } from '../../api/variantautoscaling.js';
import { loadKubeConfig, type KubeTarget } from '../../kube/config.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { createRedis } from '../../queue/connection.js';
import { redactUrl } from '../../runtime/redact.js';
import { controllerFindings, crdFindings, crdSchema, deploymentSchema, formatFindings, redisFindings, webhookConfigurationSchema, webhookFindings, type Crd, type Finding } from './findings.js';

export const DOCTOR_USAGE = `usage: ripple doctor --kubeconfig PATH [--context NAME] [--redis-url URL] [-o json]
       ripple doctor --in-cluster [--redis-url URL]

Checks a cluster before and after installing Ripple, and says what to fix:
  - CRDs already installed (Kthena's, WVA's) whose schema would prune the status fields Ripple writes
  - other controllers' admission webhooks on ModelServing / VariantAutoscaling (failurePolicy Fail refuses writes)
  - Deployments of Kthena, WVA or kuperator still running beside Ripple
  - Redis's maxmemory-policy (must be noeviction), with --redis-url (or REDIS_URL)
Exits 1 when it found a problem. It changes nothing.`;

/** Ripple's own CRDs, generated from the schemas the chart's crds/ are generated from (so it runs in the image too). */
function ourCrds(): Crd[] {
  return [MODEL_SERVING_CRD, VARIANT_AUTOSCALING_CRD].map((o) => crdSchema.parse(generateCrd(o)));
}

const listOf = <T extends z.ZodTypeAny>(item: T) => z.object({ items: z.array(item) }).passthrough();

async function clusterFindings(kc: KubeConfig): Promise<Finding[]> {
  const ours = ourCrds();
  const installed = new Map<string, Crd | undefined>();
  for (const c of ours) {
    try {
      installed.set(c.metadata.name, crdSchema.parse(await kubeRequest(kc, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${c.metadata.name}`)));
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
      installed.set(c.metadata.name, undefined);
    }
  }
  const validating = listOf(webhookConfigurationSchema).parse(await kubeRequest(kc, '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations')).items;
  const mutating = listOf(webhookConfigurationSchema).parse(await kubeRequest(kc, '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations')).items;
  const deployments = listOf(deploymentSchema).parse(await kubeRequest(kc, '/apis/apps/v1/deployments')).items;
  return [
    ...crdFindings(ours, installed),
    ...webhookFindings([...validating.map((config) => ({ kind: 'ValidatingWebhookConfiguration' as const, config })), ...mutating.map((config) => ({ kind: 'MutatingWebhookConfiguration' as const, config }))]),
    ...controllerFindings(deployments),
  ];
}

async function redisPolicy(url: string): Promise<Finding> {
  const redis = createRedis(url, { lazyConnect: true, connectTimeout: 5_000, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const reply = z.array(z.string()).parse(await redis.config('GET', 'maxmemory-policy'));
    return redisFindings(reply[1]);
  } catch (err) {
    return redisFindings(undefined, redactUrl(err instanceof Error ? err.message : String(err)));
  } finally {
    redis.disconnect();
  }
}

/** `ripple doctor`: prints its findings and exits 1 when one is a problem. */
export async function runDoctorCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'in-cluster': { type: 'boolean' },
      'redis-url': { type: 'string' },
      output: { type: 'string', short: 'o' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(DOCTOR_USAGE);
    return;
  }
  // Like the main command, never the current kube-context by default: the cluster is named.
  const kubeconfig = values.kubeconfig ?? process.env.RIPPLE_KUBECONFIG;
  let target: KubeTarget;
  if (values['in-cluster']) target = { kind: 'in-cluster' };
  else if (kubeconfig) target = { kind: 'kubeconfig', path: kubeconfig, context: values.context };
  else throw new Error(`doctor needs a cluster: --kubeconfig PATH (or RIPPLE_KUBECONFIG) or --in-cluster\n${DOCTOR_USAGE}`);
  const findings = await clusterFindings(loadKubeConfig(target));
  const redisUrl = values['redis-url'] ?? process.env.REDIS_URL;
  if (redisUrl) findings.push(await redisPolicy(redisUrl));
  console.log(values.output === 'json' ? JSON.stringify({ findings }, null, 2) : formatFindings(findings));
  if (findings.some((f) => !f.ok)) process.exitCode = 1;
}
