import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { generateCrd } from '../../api/crd.js';
import { MODEL_SERVING_CRD } from '../../api/modelserving.js';
import { VARIANT_AUTOSCALING_CRD } from '../../api/variantautoscaling.js';
import { mapBounded } from '../../functions/reconcile-autoscaler/bounded.js';
import { effectivePrometheusSettings, parseControllerConfig, type PrometheusSettings } from '../../functions/reconcile-autoscaler/config/controller-config.js';
import { autoscalerNames } from '../../functions/reconcile-autoscaler/config/names.js';
import { PrometheusAuthError, prometheusClient, PrometheusUnreachableError } from '../../functions/reconcile-autoscaler/prometheus/client.js';
import { loadKubeConfig, type KubeTarget } from '../../kube/config.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../../kube/resources.js';
import { createRedis } from '../../queue/connection.js';
import { redactUrl } from '../../base/redact.js';
import {
  controllerFindings,
  crdFindings,
  crdSchema,
  deploymentSchema,
  formatFindings,
  prometheusFindings,
  rbacFindings,
  redisFindings,
  webhookConfigurationSchema,
  webhookFindings,
  type Crd,
  type Finding,
  type PrometheusOutcome,
  type PrometheusSource,
} from './findings.js';
import { identities, loadRippleRbac, RbacFilesMissingError, requiredAccess, type RbacObject, type ResourceAccess } from './rbac-rules.js';

export const DOCTOR_USAGE = `usage: ripple doctor --kubeconfig PATH [--context NAME] [options]
       ripple doctor --in-cluster [options]
options: [--namespace NS] [--identity NAME] [--as USER] [--prometheus-url URL] [--redis-url URL] [-o json]

Checks a cluster before and after installing Ripple, and says what to fix:
  - CRDs already installed (Kthena's, WVA's) whose schema would prune the status fields Ripple writes
  - other controllers' admission webhooks on ModelServing / VariantAutoscaling (failurePolicy Fail refuses writes)
  - Deployments of Kthena, WVA or kuperator still running beside Ripple
  - RBAC: that the identity doctor runs as (or --as USER, impersonated) may make every request the roles of
    Ripple's account --identity grant (default ripple, the all-in-one account; infra/deploy/rbac names the others)
  - Prometheus: that the URL the autoscaler is configured with (its controller ConfigMap in --namespace, or
    PROMETHEUS_BASE_URL / PROMETHEUS_URL, or --prometheus-url) answers a query from where doctor runs
  - Redis's maxmemory-policy (must be noeviction), with --redis-url (or REDIS_URL)
--namespace is the namespace Ripple runs in (default POD_NAMESPACE, RIPPLE_NAMESPACE, else ripple-system).
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

const reviewSchema = z.object({ status: z.object({ allowed: z.boolean() }).passthrough() }).passthrough();
const selfReviewSchema = z.object({ status: z.object({ userInfo: z.object({ username: z.string().optional() }).passthrough() }).passthrough() }).passthrough();

/**
 * Asks the API server, one SelfSubjectAccessReview per request, what the identity doctor runs as (or `as`, by
 * impersonation) may do of what `identity`'s roles grant. The reviews answer with the cluster's own authorizer,
 * so bindings, aggregation and other authorizers all count.
 */
async function rbacCheck(kc: KubeConfig, identity: string, opts: { namespace: string; prefix: string; as?: string }): Promise<Finding> {
  let objects: RbacObject[];
  try {
    objects = loadRippleRbac();
  } catch (err) {
    if (!(err instanceof RbacFilesMissingError)) throw err;
    return { check: `RBAC of ${identity}`, ok: false, message: `could not check: ${err.message}`, fix: 'run doctor from a checkout of this version (node bin/ripple.js doctor), with --as system:serviceaccount:NAMESPACE:ACCOUNT to check an installed account' };
  }
  const required = requiredAccess(objects, identity, opts);
  if (!required) throw new Error(`--identity ${identity} is not one of Ripple's accounts: ${identities(objects).join(', ')}`);
  const headers = opts.as ? { 'Impersonate-User': opts.as } : undefined;
  let user = opts.as ?? 'the identity doctor runs as';
  try {
    const self = selfReviewSchema.parse(await kubeRequest(kc, '/apis/authentication.k8s.io/v1/selfsubjectreviews', { method: 'POST', headers, body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } }));
    user = self.status.userInfo.username ?? user;
  } catch (err) {
    // Older API servers have no SelfSubjectReview; the name is only for the message.
    if (!isStatus(err, 404)) return rbacFindings({ identity, user, required, denied: [], error: err instanceof Error ? err.message : String(err) });
  }
  try {
    const allowed = await mapBounded(required.access, 8, async (a: ResourceAccess) => {
      const review = await kubeRequest(kc, '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        method: 'POST',
        headers,
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: a } },
      });
      return reviewSchema.parse(review).status.allowed;
    });
    return rbacFindings({ identity, user, required, denied: required.access.filter((_, i) => !allowed[i]) });
  } catch (err) {
    return rbacFindings({ identity, user, required, denied: [], error: err instanceof Error ? err.message : String(err) });
  }
}

const configMapSchema = z.object({ metadata: z.object({ name: z.string() }).passthrough(), data: z.record(z.string(), z.string()).optional() }).passthrough();

/**
 * The Prometheus the autoscaler would ask, found as it finds it (cycle.ts: the environment's PROMETHEUS_BASE_URL
 * or PROMETHEUS_URL first, else its controller ConfigMap, newest name first), asked for vector(1) through the
 * autoscaler's own client (same TLS and token settings).
 */
async function prometheusCheck(kc: KubeConfig, namespace: string, flagUrl: string | undefined): Promise<Finding> {
  const env = { ...process.env, POD_NAMESPACE: namespace };
  const { names } = autoscalerNames(env);
  let source: PrometheusSource;
  let settings: PrometheusSettings;
  const envUrl = process.env['PROMETHEUS_BASE_URL'] || process.env['PROMETHEUS_URL'];
  if (flagUrl !== undefined || envUrl) {
    source = flagUrl !== undefined ? { kind: 'flag' } : { kind: 'env' };
    const { settings: s, issues } = effectivePrometheusSettings(parseControllerConfig(undefined).config, { ...process.env, PROMETHEUS_BASE_URL: flagUrl ?? envUrl });
    if (issues.length > 0) return prometheusFindings({ kind: 'invalid', source, message: issues.map((i) => i.message).join('; ') });
    settings = s;
  } else {
    let found: z.infer<typeof configMapSchema> | undefined;
    for (const name of names.configMaps.controller) {
      try {
        found = configMapSchema.parse(await kubeRequest(kc, objectPath(Resources.configMap, namespace, name)));
        break;
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
      }
    }
    const parsed = parseControllerConfig(found?.data);
    source = { kind: 'configmap', namespace, name: found?.metadata.name ?? '' };
    const bad = parsed.issues.filter((i) => i.key.startsWith('PROMETHEUS_'));
    if (bad.length > 0) return prometheusFindings({ kind: 'invalid', source, message: bad.map((i) => `${i.key}: ${i.message}`).join('; ') });
    settings = parsed.config.prometheus;
  }
  const baseUrl = settings.baseUrl;
  if (baseUrl === undefined) {
    const vas = await kubeRequest(kc, collectionPath(Resources.variantAutoscaling), { query: { limit: 500 } }).then(
      (list) => z.object({ items: z.array(z.unknown()) }).passthrough().parse(list).items.length,
      (err: unknown) => {
        if (isStatus(err, 404)) return 0; // the CRD is not installed yet: nothing needs Prometheus
        throw err;
      },
    );
    return prometheusFindings({ kind: 'not-configured', configMaps: [...names.configMaps.controller], namespace, variantAutoscalings: vas });
  }
  const shown = redactUrl(baseUrl.replace(/\/+$/, ''));
  let outcome: PrometheusOutcome;
  const started = Date.now();
  try {
    const client = await prometheusClient({ ...settings, baseUrl }, { timeoutMs: 5_000 });
    const answer = z.object({ status: z.string() }).passthrough().safeParse(await client.query('vector(1)'));
    outcome = answer.success && answer.data.status === 'success'
      ? { kind: 'answered', source, url: shown, ms: Date.now() - started }
      : { kind: 'bad-answer', source, url: shown, answer: answer.success ? `with status ${answer.data.status}` : 'without a status' };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof PrometheusAuthError) outcome = { kind: 'refused-credentials', source, message };
    else if (err instanceof PrometheusUnreachableError) {
      // The client's message leads with the server, which the finding names itself: the reason alone.
      const reason = message.replace(/^cannot reach Prometheus at \S+: /, '');
      outcome = { kind: 'unreachable', source, url: shown, reason };
    } else {
      // Certificate or token files it names that cannot be read here (they are the autoscaler pod's).
      outcome = { kind: 'unreachable', source, url: shown, reason: redactUrl(message) };
    }
  }
  return prometheusFindings(outcome);
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
      namespace: { type: 'string' },
      identity: { type: 'string' },
      as: { type: 'string' },
      'prometheus-url': { type: 'string' },
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
  const kc = loadKubeConfig(target);
  const namespace = values.namespace ?? (process.env.POD_NAMESPACE || process.env.RIPPLE_NAMESPACE || 'ripple-system');
  const findings = await clusterFindings(kc);
  findings.push(await rbacCheck(kc, values.identity ?? 'ripple', { namespace, prefix: process.env.RIPPLE_PREFIX || 'ripple', ...(values.as ? { as: values.as } : {}) }));
  findings.push(await prometheusCheck(kc, namespace, values['prometheus-url']));
  const redisUrl = values['redis-url'] ?? process.env.REDIS_URL;
  if (redisUrl) findings.push(await redisPolicy(redisUrl));
  console.log(values.output === 'json' ? JSON.stringify({ findings }, null, 2) : formatFindings(findings));
  if (findings.some((f) => !f.ok)) process.exitCode = 1;
}
