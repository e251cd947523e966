import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { generateCrd } from '../../api/crd.js';
import { MODEL_SERVING_CRD } from '../../api/modelserving.js';
import { VARIANT_AUTOSCALING_CRD } from '../../api/variantautoscaling.js';
import { controllerFindings, crdFindings, crdSchema, deploymentSchema, formatFindings, prunedPaths, redisFindings, webhookConfigurationSchema, webhookFindings, type Crd } from './findings.js';

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
