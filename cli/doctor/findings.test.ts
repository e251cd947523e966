import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { generateCrd } from '../../api/crd.js';
import { MODEL_SERVING_CRD } from '../../api/modelserving.js';
import { VARIANT_AUTOSCALING_CRD } from '../../api/variantautoscaling.js';
import { controllerFindings, crdFindings, crdSchema, deploymentSchema, formatFindings, prometheusFindings, prunedPaths, rbacFindings, redisFindings, webhookConfigurationSchema, webhookFindings, type Crd } from './findings.js';
import { identities, loadRippleRbac, RbacFilesMissingError, requiredAccess } from './rbac-rules.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ours = ['modelserving.yaml', 'variantautoscaling.yaml'].map((f) => crdSchema.parse(parse(readFileSync(path.join(root, 'infra/crds', f), 'utf8'))));

/** Ripple's CRD without the status fields only Ripple has: the shape of Kthena's or WVA's own CRD. */
function withoutStatus(crd: Crd, fields: string[]): Crd {
  const copy = crdSchema.parse(JSON.parse(JSON.stringify(crd)));
  const status = copy.spec.versions[0]!.schema!.openAPIV3Schema.properties!.status!;
  for (const f of fields) delete status.properties![f];
  copy.metadata.annotations = { 'meta.helm.sh/release-name': 'kthena' };
  return copy;
}

describe('doctor: CRDs', () => {
  it("names the status fields a Kthena- or WVA-shaped CRD would prune, and says how to replace it", () => {
    const installed = new Map([
      ['modelservings.workload.serving.volcano.sh', withoutStatus(ours[0]!, ['phase', 'roles', 'lastProgressTime'])],
      ['variantautoscalings.llmd.ai', withoutStatus(ours[1]!, ['phase', 'observedGeneration', 'currentAllocation'])],
    ]);
    const [ms, va] = crdFindings(ours, installed);
    expect(ms).toMatchObject({ ok: false, check: 'CRD modelservings.workload.serving.volcano.sh' });
    expect(ms!.message).toContain('(Helm release kthena) would prune status.phase, status.roles, status.lastProgressTime');
    expect(ms!.fix).toContain('kubectl apply --server-side --force-conflicts -f charts/ripple/crds/');
    expect(va!.message).toContain('would prune status.phase, status.observedGeneration, status.currentAllocation');
  });

  it('passes its own CRDs (as the command generates them, against the files the chart installs), absent CRDs, and a schema that preserves unknown status fields', () => {
    const generated = [MODEL_SERVING_CRD, VARIANT_AUTOSCALING_CRD].map((o) => crdSchema.parse(generateCrd(o)));
    expect(crdFindings(generated, new Map(ours.map((c) => [c.metadata.name, c]))).map((f) => f.ok)).toEqual([true, true]);
    expect(crdFindings(ours, new Map(ours.map((c) => [c.metadata.name, c]))).every((f) => f.ok)).toBe(true);
    expect(crdFindings(ours, new Map()).every((f) => f.ok && f.message.startsWith('not installed'))).toBe(true);
    expect(prunedPaths({ properties: { status: { properties: { phase: {}, roles: { items: { properties: { name: {} } } } } } } }, { properties: { status: { 'x-kubernetes-preserve-unknown-fields': true } } })).toEqual([]);
  });
});

describe('doctor: webhooks, controllers, Redis', () => {
  it("flags another controller's Fail webhook on ModelServing, not Ripple's own nor unrelated ones", () => {
    const config = (name: string, labels: Record<string, string>, webhook: string, groups: string[], resources: string[], failurePolicy = 'Fail') =>
      webhookConfigurationSchema.parse({ metadata: { name, labels }, webhooks: [{ name: webhook, failurePolicy, rules: [{ apiGroups: groups, resources, operations: ['CREATE', 'UPDATE'] }] }] });
    const findings = webhookFindings([
      { kind: 'ValidatingWebhookConfiguration', config: config('kthena-validating', {}, 'validate.modelserving.volcano.sh', ['workload.serving.volcano.sh'], ['modelservings']) },
      { kind: 'MutatingWebhookConfiguration', config: config('ripple-ops-lifecycle', { 'app.kubernetes.io/part-of': 'ripple' }, 'pod-readiness-gate.ops-lifecycle.ripple.dev', [''], ['pods']) },
      { kind: 'ValidatingWebhookConfiguration', config: config('cert-manager', {}, 'webhook.cert-manager.io', ['cert-manager.io'], ['*']) },
    ]);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ ok: false, check: 'ValidatingWebhookConfiguration kthena-validating', fix: 'remove it together with that controller: kubectl delete validatingwebhookconfiguration kthena-validating' });
    expect(findings[0]!.message).toContain('(failurePolicy Fail) admits ModelServing writes');
    expect(webhookFindings([])[0]!.ok).toBe(true);
  });

  it("flags a running peer controller's Deployment, not one scaled to zero", () => {
    const dep = (name: string, image: string, replicas: number) => deploymentSchema.parse({ metadata: { name, namespace: 'kthena-system' }, spec: { replicas, template: { spec: { containers: [{ image }] } } } });
    const findings = controllerFindings([dep('kthena-controller-manager', 'ghcr.io/volcano-sh/kthena-controller-manager:v1.0.0', 1), dep('wva', 'ghcr.io/llm-d/llm-d-workload-variant-autoscaler:v0.5.1', 0), dep('web', 'nginx:1', 3)]);
    expect(findings).toHaveLength(1);
    expect(findings[0]!.fix).toBe('scale it to zero before Ripple starts: kubectl -n kthena-system scale deployment kthena-controller-manager --replicas=0');
  });

  it('wants noeviction', () => {
    expect(redisFindings('noeviction').ok).toBe(true);
    expect(redisFindings('allkeys-lru')).toMatchObject({ ok: false, fix: expect.stringContaining('noeviction') });
    expect(formatFindings([redisFindings('allkeys-lru'), redisFindings('noeviction')])).toMatch(/^PROBLEM {2}Redis maxmemory-policy: allkeys-lru[\s\S]*\nok {7}Redis maxmemory-policy: noeviction\n\n1 problem found$/);
  });
});

describe('doctor: RBAC', () => {
  const objects = loadRippleRbac();
  const opts = { namespace: 'ripple-system', prefix: 'ripple' };

  it("reads each account's requests from the files the chart grants: a Role's in Ripple's namespace, the Lease named after the prefix", () => {
    expect(identities(objects)).toEqual(expect.arrayContaining(['ripple', 'ripple-watcher', 'ripple-ops', 'ripple-worker-reconcile-modelserving', 'ripple-worker-ops-lifecycle']));
    const watcher = requiredAccess(objects, 'ripple-watcher', { namespace: 'ai', prefix: 'blue' })!;
    expect(watcher.files).toEqual(['infra/deploy/rbac/watcher/rbac.yaml']);
    expect(watcher.access).toContainEqual({ verb: 'watch', group: 'discovery.k8s.io', resource: 'endpointslices' });
    expect(watcher.access).toContainEqual({ verb: 'update', group: 'coordination.k8s.io', resource: 'leases', name: 'blue-watcher', namespace: 'ai' });
    // A subresource is asked as one; ops-lifecycle's second ClusterRole (grace-delete) is bound to the same account.
    expect(requiredAccess(objects, 'ripple-worker-reconcile-modelserving', opts)!.access).toContainEqual({ verb: 'patch', group: 'workload.serving.volcano.sh', resource: 'modelservings', subresource: 'status' });
    expect(requiredAccess(objects, 'ripple-worker-ops-lifecycle', opts)!.files).toEqual(['infra/deploy/rbac/ops-lifecycle/grace-delete/rbac.yaml', 'infra/deploy/rbac/ops-lifecycle/rbac.yaml']);
    // The all-in-one account is bound to the watcher's, the ops server's and every function's roles.
    const all = requiredAccess(objects, 'ripple', opts)!;
    for (const a of [...watcher.access.filter((x) => !x.namespace), ...requiredAccess(objects, 'ripple-worker-reconcile-modelserving', opts)!.access]) expect(all.access).toContainEqual(a);
    expect(new Set(all.access.map((a) => JSON.stringify(a))).size).toBe(all.access.length);
    expect(requiredAccess(objects, 'kthena', opts)).toBeUndefined();
    // Installed without the files (an image that leaves them out): said, not a crash.
    expect(() => loadRippleRbac(['/nonexistent'])).toThrow(RbacFilesMissingError);
  });

  it('names what is denied grouped by resource, with the files to apply', () => {
    const required = requiredAccess(objects, 'ripple-watcher', opts)!;
    const denied = required.access.filter((a) => a.resource === 'endpointslices' || (a.resource === 'leases' && a.verb !== 'create'));
    const f = rbacFindings({ identity: 'ripple-watcher', user: 'system:serviceaccount:ripple-system:ripple-watcher', required, denied });
    expect(f).toMatchObject({ ok: false, check: 'RBAC of ripple-watcher', message: 'system:serviceaccount:ripple-system:ripple-watcher may not: list, watch discovery.k8s.io/endpointslices; get, update coordination.k8s.io/leases ripple-watcher in ripple-system' });
    expect(f.fix).toContain('kubectl apply -k infra/deploy/rbac/watcher');
    expect(rbacFindings({ identity: 'ripple-watcher', user: 'u', required, denied: [] })).toMatchObject({ ok: true, message: `u may make all ${required.access.length} requests ripple-watcher's roles grant (infra/deploy/rbac/watcher/rbac.yaml)` });
  });
});

describe('doctor: Prometheus', () => {
  const cm = { kind: 'configmap' as const, namespace: 'ripple-system', name: 'wva-variantautoscaling-config' };

  it('says where the URL came from and what to change when it cannot be reached, refuses the token or is not Prometheus', () => {
    const down = prometheusFindings({ kind: 'unreachable', source: cm, url: 'http://prometheus.monitoring.svc:9090', reason: 'getaddrinfo ENOTFOUND prometheus.monitoring.svc' });
    expect(down).toMatchObject({ ok: false, message: 'cannot reach Prometheus at http://prometheus.monitoring.svc:9090 (PROMETHEUS_BASE_URL of ConfigMap ripple-system/wva-variantautoscaling-config): getaddrinfo ENOTFOUND prometheus.monitoring.svc' });
    expect(down.fix).toContain('check PROMETHEUS_BASE_URL in ConfigMap ripple-system/wva-variantautoscaling-config');
    expect(down.fix).toContain('--in-cluster');
    expect(prometheusFindings({ kind: 'unreachable', source: { kind: 'flag' }, url: 'http://x', reason: 'r' }).fix).toMatch(/^check --prometheus-url /);
    expect(prometheusFindings({ kind: 'refused-credentials', source: cm, message: 'http://p answered 401 Unauthorized: bad token' }).fix).toContain('PROMETHEUS_BEARER_TOKEN');
    expect(prometheusFindings({ kind: 'bad-answer', source: { kind: 'env' }, url: 'http://p/api', answer: 'without a status' }).message).toBe("http://p/api (PROMETHEUS_BASE_URL of the environment) is not Prometheus's HTTP API: vector(1) was answered without a status");
    expect(prometheusFindings({ kind: 'answered', source: cm, url: 'http://p', ms: 4 })).toMatchObject({ ok: true, message: 'http://p (PROMETHEUS_BASE_URL of ConfigMap ripple-system/wva-variantautoscaling-config) answered a query in 4 ms' });
  });

  it('an unconfigured Prometheus is a problem only once a VariantAutoscaling needs it', () => {
    const base = { kind: 'not-configured' as const, configMaps: ['wva-variantautoscaling-config', 'workload-variant-autoscaler-variantautoscaling-config'], namespace: 'ripple-system' };
    expect(prometheusFindings({ ...base, variantAutoscalings: 0 }).ok).toBe(true);
    const needed = prometheusFindings({ ...base, variantAutoscalings: 3 });
    expect(needed).toMatchObject({ ok: false, message: 'not configured: no wva-variantautoscaling-config or workload-variant-autoscaler-variantautoscaling-config in ripple-system sets PROMETHEUS_BASE_URL, so the autoscaler cannot scale the 3 VariantAutoscalings in the cluster' });
    expect(needed.fix).toContain('set PROMETHEUS_BASE_URL in ConfigMap ripple-system/wva-variantautoscaling-config');
  });
});
