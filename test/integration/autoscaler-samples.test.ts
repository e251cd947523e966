import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { parseControllerConfig } from '../../functions/reconcile-autoscaler/config/controller-config.js';
import { parseSaturationConfig } from '../../functions/reconcile-autoscaler/config/saturation-config.js';
import { parseScaleToZeroConfig } from '../../functions/reconcile-autoscaler/config/scale-to-zero-config.js';
import { LABEL, METRIC } from '../../functions/reconcile-autoscaler/metrics/series.js';
import { isStatus } from '../../kube/raw.js';
import { WVA_CONTROLLER_DATA, WVA_SAMPLE_VAS, WVA_SATURATION_DATA, WVA_SCALE_TO_ZERO_DATA } from '../fixtures/wva-samples.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const examples = path.join(root, 'infra', 'examples', 'autoscaler');

const NAMESPACES = ['llm-inference', 'tenant-gold', 'tenant-silver', 'llm-d-sim', 'workload-variant-autoscaler-system'];

describe('VariantAutoscaling CRD and manifests', () => {
  let sb: TestSandbox;
  const created: string[] = [];
  const kubeconfig = inject('kubeconfig');
  const bundled = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
  const kubectl = (args: string[], input?: string) =>
    spawnSync(existsSync(bundled) ? bundled : 'kubectl', ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', ...(input !== undefined ? { input } : {}) });

  beforeAll(async () => {
    sb = await openSandbox('as-samples');
    for (const name of NAMESPACES) {
      // A previous run's namespace may still be terminating: wait it out rather than apply into it.
      const state = await waitFor(`namespace ${name} usable`, 120_000, async () => {
        try {
          return (await sb.core.readNamespace({ name })).status?.phase === 'Terminating' ? undefined : 'exists';
        } catch (err) {
          if (isStatus(err, 404)) return 'absent';
          throw err;
        }
      }, 500);
      if (state === 'absent') {
        await sb.core.createNamespace({ body: { metadata: { name, labels: { 'ripple.dev/test': 'true' } } } });
        created.push(name);
      }
    }
  });

  afterAll(async () => {
    kubectl(['delete', '--ignore-not-found', '-f', '-'], WVA_SAMPLE_VAS);
    for (const f of ['variantautoscaling.yaml', 'hpa.yaml', 'configmaps.yaml']) kubectl(['delete', '--ignore-not-found', '-f', path.join(examples, f)]);
    for (const name of created) await sb.core.deleteNamespace({ name }).catch(() => undefined);
    await sb?.cleanup();
  });

  it("WVA's sample VariantAutoscalings apply unchanged, with the CRD's default and printer columns", () => {
    const applied = kubectl(['apply', '-f', '-'], WVA_SAMPLE_VAS);
    expect(applied.stderr).toBe('');
    expect(applied.status).toBe(0);
    expect(applied.stdout.match(/variantautoscaling\.llmd\.ai\/\S+ created|configured|unchanged/g)?.length).toBe(7);

    const cost = kubectl(['get', 'va', 'llama-8b-default-cost', '-n', 'llm-inference', '-o', 'jsonpath={.spec.variantCost}']);
    expect(cost.stdout).toBe('10.0');
    const table = kubectl(['get', 'va', '-n', 'llm-inference']);
    expect(table.stdout.split('\n')[0]?.split(/\s+/).filter(Boolean)).toEqual(['NAME', 'TARGET', 'MODEL', 'OPTIMIZED', 'METRICSREADY', 'AGE']);
    const row = table.stdout.split('\n').find((l) => l.startsWith('llama-70b-premium-h100 '));
    expect(row?.split(/\s+/).slice(0, 3)).toEqual(['llama-70b-premium-h100', 'llama-70b-premium-h100', 'meta/llama-3.1-70b']);
    expect(kubectl(['get', 'variantautoscalings.llmd.ai', '-n', 'llm-inference', '-o', 'name']).stdout.split('\n').filter(Boolean)).toHaveLength(4);
  });

  it('rejects an empty modelID and a malformed variantCost, naming the field', () => {
    const bad = (spec: string) =>
      kubectl(['apply', '-f', '-'], `apiVersion: llmd.ai/v1alpha1\nkind: VariantAutoscaling\nmetadata: {name: bad, namespace: llm-inference}\nspec:\n${spec}`);
    const emptyModel = bad('  scaleTargetRef: {kind: Deployment, name: x}\n  modelID: ""\n');
    expect(emptyModel.status).not.toBe(0);
    expect(emptyModel.stderr).toContain('spec.modelID');
    const cost = bad('  scaleTargetRef: {kind: Deployment, name: x}\n  modelID: m\n  variantCost: "ten"\n');
    expect(cost.status).not.toBe(0);
    expect(cost.stderr).toContain('spec.variantCost');
    const noTarget = bad('  modelID: m\n');
    expect(noTarget.status).not.toBe(0);
    expect(noTarget.stderr).toContain('spec.scaleTargetRef');
  });

  it("WVA's ConfigMap samples parse with no issue", () => {
    const controller = parseControllerConfig(WVA_CONTROLLER_DATA);
    expect(controller.issues).toEqual([]);
    expect(controller.ignoredKeys).toEqual([]);
    expect(controller.config.globalOptIntervalMs).toBe(60_000);
    const saturation = parseSaturationConfig(WVA_SATURATION_DATA);
    expect(saturation.issues).toEqual([]);
    expect(saturation.config.defaultSource).toBe('configmap');
    expect(parseScaleToZeroConfig(WVA_SCALE_TO_ZERO_DATA).issues).toEqual([]);
  });

  it("Ripple's examples (infra/examples/autoscaler) apply, and their selectors use the exported metric and labels", () => {
    for (const f of ['variantautoscaling.yaml', 'configmaps.yaml', 'hpa.yaml']) {
      const r = kubectl(['apply', '-f', path.join(examples, f)]);
      expect(r.status, `${f}: ${r.stderr}`).toBe(0);
    }
    // The ConfigMap example is what the function reads: it must parse cleanly too.
    const docs = parseAllDocuments(readFileSync(path.join(examples, 'configmaps.yaml'), 'utf8')).map((d) => d.toJS() as unknown);
    const cm = z.object({ metadata: z.object({ name: z.string() }), data: z.record(z.string(), z.string()) });
    const [controllerCm, saturationCm] = docs.map((d) => cm.parse(d));
    expect(parseControllerConfig(controllerCm?.data).issues).toEqual([]);
    expect(parseSaturationConfig(saturationCm?.data).issues).toEqual([]);

    const exported = new Set<string>([LABEL.variantName, `exported_${LABEL.namespace}`, LABEL.acceleratorType, LABEL.controllerInstance]);
    const hpa = z
      .object({ spec: z.object({ metrics: z.array(z.object({ external: z.object({ metric: z.object({ name: z.string(), selector: z.object({ matchLabels: z.record(z.string(), z.string()) }) }) }) })) }) })
      .parse(parseAllDocuments(readFileSync(path.join(examples, 'hpa.yaml'), 'utf8'))[0]?.toJS());
    const metric = hpa.spec.metrics[0]!.external.metric;
    expect(metric.name).toBe(METRIC.desiredReplicas);
    // variant_name is the VA's name by default (WVA since v0.5.1), and the example's VA is not named as its Deployment.
    const va = z
      .object({ metadata: z.object({ name: z.string() }), spec: z.object({ scaleTargetRef: z.object({ name: z.string() }) }) })
      .parse(parseAllDocuments(readFileSync(path.join(examples, 'variantautoscaling.yaml'), 'utf8'))[0]?.toJS());
    expect(va.metadata.name).not.toBe(va.spec.scaleTargetRef.name);
    expect(metric.selector.matchLabels[LABEL.variantName]).toBe(va.metadata.name);
    for (const label of Object.keys(metric.selector.matchLabels)) expect(exported.has(label), label).toBe(true);

    const keda = z
      .object({ spec: z.object({ triggers: z.array(z.object({ type: z.literal('prometheus'), metadata: z.object({ query: z.string(), threshold: z.string() }) })) }) })
      .parse(parseAllDocuments(readFileSync(path.join(examples, 'keda-scaledobject.yaml'), 'utf8'))[0]?.toJS());
    const query = keda.spec.triggers[0]!.metadata.query;
    // Aggregated: every Ripple process exports the series, and KEDA refuses a query returning several (issue 14 scenario 6).
    expect(query.startsWith(`max(${METRIC.desiredReplicas}{`)).toBe(true);
    expect(query).toContain(`${LABEL.variantName}="${va.metadata.name}"`);
    for (const [, label] of query.matchAll(/(\w+)=/g)) expect(exported.has(label!), label).toBe(true);
  });
});
