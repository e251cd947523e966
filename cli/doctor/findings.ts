/**
 * `ripple doctor`'s judgement, apart from its I/O (command.ts reads the cluster and Redis): what in a cluster
 * would make Ripple lose status or be refused, said in words with what to do. Each check turns what was read into
 * findings; nothing here talks to a server.
 */
import path from 'node:path';
import { z } from 'zod';
import type { RequiredAccess, ResourceAccess } from './rbac-rules.js';

export interface Finding {
  check: string;
  ok: boolean;
  /** What is wrong (ok: what was seen). */
  message: string;
  /** What to do about it (problems only). */
  fix?: string;
}

const schemaNode: z.ZodType<SchemaNode> = z.lazy(() =>
  z
    .object({
      properties: z.record(z.string(), schemaNode).optional(),
      items: schemaNode.optional(),
      'x-kubernetes-preserve-unknown-fields': z.boolean().optional(),
    })
    .passthrough(),
);
interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}
export const crdSchema = z
  .object({
    metadata: z.object({ name: z.string(), labels: z.record(z.string(), z.string()).optional(), annotations: z.record(z.string(), z.string()).optional() }).passthrough(),
    spec: z.object({ versions: z.array(z.object({ name: z.string(), storage: z.boolean().optional(), schema: z.object({ openAPIV3Schema: schemaNode }).optional() }).passthrough()) }).passthrough(),
  })
  .passthrough();
export type Crd = z.infer<typeof crdSchema>;

/** Field paths (`status.phase`, `status.roles[].name`) a schema keeps; a node that preserves unknown fields keeps everything below it. */
function keptPaths(node: SchemaNode, prefix: string, out: Map<string, boolean>): void {
  out.set(prefix, node['x-kubernetes-preserve-unknown-fields'] === true);
  for (const [k, child] of Object.entries(node.properties ?? {})) keptPaths(child, prefix ? `${prefix}.${k}` : k, out);
  if (node.items) keptPaths(node.items, `${prefix}[]`, out);
}

/** The paths of `ours` that `theirs` would prune: neither declared by it nor under a node of it that preserves unknown fields. */
export function prunedPaths(ours: SchemaNode, theirs: SchemaNode): string[] {
  const mine = new Map<string, boolean>();
  const kept = new Map<string, boolean>();
  keptPaths(ours, '', mine);
  keptPaths(theirs, '', kept);
  const pruned: string[] = [];
  for (const p of mine.keys()) {
    if (p === '' || kept.has(p)) continue;
    // Kept by an ancestor that preserves unknown fields.
    const parts = p.split('.');
    let preserved = false;
    for (let i = parts.length - 1; i >= 0 && !preserved; i--) preserved = kept.get(parts.slice(0, i).join('.')) === true;
    if (!preserved) pruned.push(p);
  }
  // The top of each pruned subtree only.
  return pruned.filter((p) => !pruned.some((q) => q !== p && (p.startsWith(`${q}.`) || p.startsWith(`${q}[]`))));
}

const storageSchema = (crd: Crd) => (crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0])?.schema?.openAPIV3Schema;

/** Each of Ripple's CRDs against the one installed under its name (Kthena's, WVA's or an older Ripple's). */
export function crdFindings(ours: Crd[], installed: ReadonlyMap<string, Crd | undefined>): Finding[] {
  return ours.map((mine) => {
    const name = mine.metadata.name;
    const check = `CRD ${name}`;
    const theirs = installed.get(name);
    const apply = 'kubectl apply --server-side --force-conflicts -f charts/ripple/crds/';
    if (!theirs) return { check, ok: true, message: 'not installed: the chart installs it' };
    const a = storageSchema(mine);
    const b = storageSchema(theirs);
    if (!a || !b) return { check, ok: false, message: 'the installed CRD has no schema for its storage version', fix: `replace it with Ripple's: ${apply}` };
    const pruned = prunedPaths(a, b);
    if (pruned.length === 0) return { check, ok: true, message: "its schema keeps every field Ripple writes" };
    const owner = theirs.metadata.annotations?.['meta.helm.sh/release-name'];
    const status = pruned.filter((p) => p.startsWith('status'));
    return {
      check,
      ok: false,
      message: `the installed schema${owner ? ` (Helm release ${owner})` : ''} would prune ${pruned.join(', ')}${status.length ? ': Ripple\'s status (phase and the Degraded/Failed alerts) would never be stored' : ''}. Helm skips CRDs that already exist, so installing the chart does not replace it`,
      fix: `replace it with Ripple's before installing: ${apply} (docs/migration.md)`,
    };
  });
}

const webhookRule = z.object({ apiGroups: z.array(z.string()).default([]), resources: z.array(z.string()).default([]), operations: z.array(z.string()).default([]) }).passthrough();
export const webhookConfigurationSchema = z
  .object({
    kind: z.string().optional(),
    metadata: z.object({ name: z.string(), labels: z.record(z.string(), z.string()).optional() }).passthrough(),
    webhooks: z.array(z.object({ name: z.string(), failurePolicy: z.string().optional(), rules: z.array(webhookRule).default([]) }).passthrough()).default([]),
  })
  .passthrough();
export type WebhookConfiguration = z.infer<typeof webhookConfigurationSchema>;

/** The kinds Ripple owns, by API group and resource. */
export const OWNED = [
  { group: 'workload.serving.volcano.sh', resource: 'modelservings', kind: 'ModelServing' },
  { group: 'llmd.ai', resource: 'variantautoscalings', kind: 'VariantAutoscaling' },
];

/** Admission webhooks of another controller on the kinds Ripple owns: with failurePolicy Fail, one whose service is gone refuses every write. */
export function webhookFindings(configs: Array<{ kind: 'ValidatingWebhookConfiguration' | 'MutatingWebhookConfiguration'; config: WebhookConfiguration }>): Finding[] {
  const out: Finding[] = [];
  for (const { kind, config } of configs) {
    if (config.metadata.labels?.['app.kubernetes.io/part-of'] === 'ripple') continue;
    for (const w of config.webhooks) {
      if (w.name.endsWith('.ripple.dev')) continue;
      const hits = OWNED.filter((o) => w.rules.some((r) => (r.apiGroups.includes(o.group) || r.apiGroups.includes('*')) && r.resources.some((res) => res === '*' || res === o.resource || res.startsWith(`${o.resource}/`))));
      if (hits.length === 0) continue;
      const policy = w.failurePolicy ?? 'Fail';
      const kinds = hits.map((h) => h.kind).join(' and ');
      const command = `kubectl delete ${kind.toLowerCase()} ${config.metadata.name}`;
      out.push({
        check: `${kind} ${config.metadata.name}`,
        ok: false,
        message:
          policy === 'Fail'
            ? `webhook ${w.name} (failurePolicy Fail) admits ${kinds} writes: once its controller is scaled down it refuses every one of them, Ripple's finalizer and status patches included`
            : `webhook ${w.name} (failurePolicy ${policy}) of another controller still admits ${kinds} writes and may change or reject them`,
        fix: `remove it together with that controller: ${command}`,
      });
    }
  }
  return out.length ? out : [{ check: 'admission webhooks', ok: true, message: `no other controller's webhook acts on ${OWNED.map((o) => o.kind).join(' or ')}` }];
}

export const deploymentSchema = z
  .object({
    metadata: z.object({ name: z.string(), namespace: z.string().optional() }).passthrough(),
    spec: z.object({ replicas: z.number().optional(), template: z.object({ spec: z.object({ containers: z.array(z.object({ image: z.string().optional(), args: z.array(z.string()).optional() }).passthrough()) }).passthrough() }) }).passthrough(),
  })
  .passthrough();
export type Deployment = z.infer<typeof deploymentSchema>;

/** Images of the controllers Ripple replaces: a second one reconciling the same objects fights Ripple over them. */
const PEER_IMAGES: Array<{ pattern: RegExp; what: string }> = [
  { pattern: /kthena|model-serving-controller|volcano-sh\/.*model/i, what: "Kthena's ModelServing controller" },
  { pattern: /workload-variant-autoscaler|llm-d.*autoscaler/i, what: 'llm-d WVA' },
  { pattern: /kuperator|kusionstack\/operating/i, what: "KusionStack's kuperator (PodOpsLifecycle)" },
];

export function controllerFindings(deployments: Deployment[]): Finding[] {
  const out: Finding[] = [];
  for (const d of deployments) {
    if ((d.spec.replicas ?? 1) === 0) continue;
    const image = d.spec.template.spec.containers.map((c) => c.image ?? '').find((i) => PEER_IMAGES.some((p) => p.pattern.test(i)));
    if (!image) continue;
    const what = PEER_IMAGES.find((p) => p.pattern.test(image))!.what;
    const ref = `${d.metadata.namespace ?? ''}/${d.metadata.name}`;
    out.push({
      check: `Deployment ${ref}`,
      ok: false,
      message: `${what} runs (${image}, ${d.spec.replicas ?? 1} replicas): two controllers would write the same objects and their status`,
      fix: `scale it to zero before Ripple starts: kubectl -n ${d.metadata.namespace ?? 'NAMESPACE'} scale deployment ${d.metadata.name} --replicas=0`,
    });
  }
  return out.length ? out : [{ check: 'other controllers', ok: true, message: 'no Deployment of Kthena, WVA or kuperator runs' }];
}

/** Redis must not evict: an evicted job or lease key is a lost reconcile. `policy` undefined: Redis could not be asked. */
export function redisFindings(policy: string | undefined, error?: string): Finding {
  const check = 'Redis maxmemory-policy';
  if (policy === undefined) return { check, ok: false, message: `could not read it${error ? `: ${error}` : ''}`, fix: 'check REDIS_URL / --redis-url, or run CONFIG GET maxmemory-policy yourself (managed Redis may refuse CONFIG)' };
  if (policy === 'noeviction') return { check, ok: true, message: 'noeviction' };
  return { check, ok: false, message: `${policy}: Redis may evict queue keys under memory pressure, and an evicted key is a lost reconcile`, fix: 'set maxmemory-policy noeviction (redis.conf, or your provider\'s parameter group) and size Redis (docs/operations.md, "Sizing Redis")' };
}

/** One request as RBAC shows it: `discovery.k8s.io/endpointslices`, `pods`, `coordination.k8s.io/leases ripple-watcher in ripple-system`. */
function describeAccess(a: ResourceAccess): string {
  const resource = `${a.group ? `${a.group}/` : ''}${a.resource}${a.subresource ? `/${a.subresource}` : ''}`;
  return `${resource}${a.name ? ` ${a.name}` : ''}${a.namespace ? ` in ${a.namespace}` : ''}`;
}

/**
 * Whether `user` may make every request `identity`'s roles grant (rbac-rules.ts). `denied` are the requests a
 * SelfSubjectAccessReview answered not allowed; they are named grouped by resource, verbs in the roles' order.
 * `error`: the reviews could not be made at all.
 */
export function rbacFindings(input: { identity: string; user: string; required: RequiredAccess; denied: ResourceAccess[]; error?: string }): Finding {
  const { identity, user, required, denied } = input;
  const check = `RBAC of ${identity}`;
  if (input.error !== undefined) {
    return { check, ok: false, message: `could not ask the API server what ${user} may do: ${input.error}`, fix: '--as needs the impersonate permission; without --as doctor checks the identity it runs as' };
  }
  if (denied.length === 0) return { check, ok: true, message: `${user} may make all ${required.access.length} requests ${identity}'s roles grant (${required.files.join(', ')})` };
  const byResource = new Map<string, string[]>();
  for (const a of denied) {
    const key = describeAccess(a);
    byResource.set(key, [...(byResource.get(key) ?? []), a.verb]);
  }
  const missing = [...byResource].map(([resource, verbs]) => `${verbs.join(', ')} ${resource}`);
  return {
    check,
    ok: false,
    message: `${user} may not: ${missing.join('; ')}`,
    fix: `grant ${identity} the roles of ${required.files.join(' and ')}: the chart does with rbac.create=true (its default), kustomize with ${[...new Set(required.files.map((f) => path.dirname(f)))].map((d) => `kubectl apply -k ${d}`).join(', ')}; each request refused here fails a reconcile with 403`,
  };
}

/** Where the Prometheus URL doctor checked came from, as a fix names it. */
export type PrometheusSource = { kind: 'flag' } | { kind: 'env' } | { kind: 'configmap'; namespace: string; name: string };

const sourceText = (s: PrometheusSource) =>
  s.kind === 'flag' ? '--prometheus-url' : s.kind === 'env' ? 'PROMETHEUS_BASE_URL of the environment' : `PROMETHEUS_BASE_URL of ConfigMap ${s.namespace}/${s.name}`;
const whereToFix = (s: PrometheusSource) =>
  s.kind === 'flag' ? '--prometheus-url' : s.kind === 'env' ? "PROMETHEUS_BASE_URL in the autoscaler's environment" : `PROMETHEUS_BASE_URL in ConfigMap ${s.namespace}/${s.name}`;

/** What asking Prometheus for `vector(1)` came to. */
export type PrometheusOutcome =
  | { kind: 'answered'; source: PrometheusSource; url: string; ms: number }
  | { kind: 'not-configured'; configMaps: string[]; namespace: string; variantAutoscalings: number }
  | { kind: 'invalid'; source: PrometheusSource; message: string }
  | { kind: 'unreachable'; source: PrometheusSource; url: string; reason: string }
  | { kind: 'refused-credentials'; source: PrometheusSource; message: string }
  | { kind: 'bad-answer'; source: PrometheusSource; url: string; answer: string };

/** Whether the autoscaler can reach Prometheus, from where doctor runs. */
export function prometheusFindings(outcome: PrometheusOutcome): Finding {
  const check = 'Prometheus';
  const fromHere =
    'doctor asks from where it runs: outside the cluster a Service name (prometheus.monitoring.svc) does not resolve, so run it in the cluster (ripple doctor --in-cluster, from Ripple\'s image) or give --prometheus-url a port-forward';
  switch (outcome.kind) {
    case 'answered':
      return { check, ok: true, message: `${outcome.url} (${sourceText(outcome.source)}) answered a query in ${outcome.ms} ms` };
    case 'not-configured': {
      const where = `set PROMETHEUS_BASE_URL in ConfigMap ${outcome.namespace}/${outcome.configMaps[0] ?? ''} (docs/autoscaler.md; WVA keeps its own in workload-variant-autoscaler-system) or PROMETHEUS_URL in the autoscaler's environment`;
      return outcome.variantAutoscalings === 0
        ? { check, ok: true, message: `not configured (no ${outcome.configMaps.join(' or ')} in ${outcome.namespace} names it), and no VariantAutoscaling needs it yet` }
        : {
            check,
            ok: false,
            message: `not configured: no ${outcome.configMaps.join(' or ')} in ${outcome.namespace} sets PROMETHEUS_BASE_URL, so the autoscaler cannot scale the ${outcome.variantAutoscalings === 1 ? 'VariantAutoscaling' : `${outcome.variantAutoscalings} VariantAutoscalings`} in the cluster`,
            fix: where,
          };
    }
    case 'invalid':
      return { check, ok: false, message: `${sourceText(outcome.source)} is unusable: ${outcome.message}`, fix: `correct ${whereToFix(outcome.source)}` };
    case 'unreachable':
      return { check, ok: false, message: `cannot reach Prometheus at ${outcome.url} (${sourceText(outcome.source)}): ${outcome.reason}`, fix: `check ${whereToFix(outcome.source)} (the autoscaler reads it every cycle) and that Prometheus serves its HTTP API there; ${fromHere}` };
    case 'refused-credentials':
      return { check, ok: false, message: outcome.message, fix: `fix PROMETHEUS_BEARER_TOKEN (or PROMETHEUS_TOKEN_PATH) or the credentials in ${whereToFix(outcome.source)}` };
    case 'bad-answer':
      return { check, ok: false, message: `${outcome.url} (${sourceText(outcome.source)}) is not Prometheus's HTTP API: vector(1) was answered ${outcome.answer}`, fix: `point ${whereToFix(outcome.source)} at Prometheus's base URL (the one /api/v1/query is under)` };
  }
}

export function formatFindings(findings: Finding[]): string {
  const lines = findings.map((f) => `${f.ok ? 'ok     ' : 'PROBLEM'}  ${f.check}: ${f.message}${f.fix ? `\n           fix: ${f.fix}` : ''}`);
  const problems = findings.filter((f) => !f.ok).length;
  lines.push('', problems === 0 ? 'no problems found' : `${problems} problem${problems === 1 ? '' : 's'} found`);
  return lines.join('\n');
}
