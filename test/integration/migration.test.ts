import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdmissionregistrationV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { loadKubeConfig } from '../../kube/config.js';
import { startControlPlane, type ControlPlane } from '../../sandbox/control-plane.js';
import { msManifest } from '../fixtures/modelserving-fixtures.js';
import { startCli, stopCli, type RunningCli } from '../fixtures/http-cli.js';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Issue 32, "A safe switch", on a control plane of its own (the CRDs are cluster-wide: replacing them on the
// shared sandbox would disturb every other test): Kthena- and WVA-shaped CRDs (Ripple's without the status
// fields only Ripple writes) and Kthena's Fail webhook are there first, with objects. `ripple doctor` names each
// problem; the steps of docs/migration.md (remove the webhook, apply Ripple's CRDs server-side) fix them, and a
// Ripple started afterwards gets its status stored: phase on the ModelServing and the VariantAutoscaling.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const kubectlBin = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
const findingSchema = z.object({ check: z.string(), ok: z.boolean(), message: z.string(), fix: z.string().optional() });
const dir = path.join(root, `.sandbox-migration-${process.pid}`);

/** Ripple's CRD file with the given status fields removed: the shape of the peer's CRD. */
function peerShaped(file: string, drop: string[]): Record<string, unknown> {
  const crd = z.object({ metadata: z.record(z.string(), z.unknown()), spec: z.object({ versions: z.array(z.object({ schema: z.object({ openAPIV3Schema: z.object({ properties: z.object({ status: z.object({ properties: z.record(z.string(), z.unknown()) }).passthrough() }).passthrough() }).passthrough() }) }).passthrough()) }).passthrough() }).passthrough().parse(parse(readFileSync(path.join(root, 'infra/crds', file), 'utf8')));
  for (const f of drop) delete crd.spec.versions[0]!.schema.openAPIV3Schema.properties.status.properties[f];
  return { ...crd, metadata: { ...crd.metadata, annotations: { 'meta.helm.sh/release-name': 'peer' } } };
}

function run(cmd: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out, err }));
  });
}

let cp: ControlPlane;
let kc: KubeConfig;
let sb: TestSandbox;
let ripple: RunningCli | undefined;
// The autoscaler's Prometheus, which doctor asks once VariantAutoscalings exist (a WVA cluster has one).
let prometheus: RunningPrometheus;
beforeAll(async () => {
  prometheus = await startPrometheus({ targets: [] });
  // The shared sandbox only for a Redis and a key prefix of this test's own.
  sb = await openSandbox('migration');
  process.env.RIPPLE_SANDBOX_NODES = '1';
  cp = await startControlPlane({ dir, log: () => undefined });
  kc = loadKubeConfig({ kind: 'kubeconfig', path: cp.kubeconfig });
}, 180_000);
afterAll(async () => {
  if (ripple) await stopCli(ripple, 'SIGKILL');
  await cp?.stop();
  await prometheus?.stop();
  rmSync(dir, { recursive: true, force: true });
  await sb?.cleanup();
});

describe('switching a cluster from Kthena and WVA', () => {
  it('doctor names the pruning CRDs and the webhook; after docs/migration.md, Ripple stores its status', async () => {
    // Through kubectl: the typed client's models drop x-kubernetes-int-or-string.
    const crds = [
      peerShaped('modelserving.yaml', ['phase', 'roles', 'lastProgressTime']),
      peerShaped('variantautoscaling.yaml', ['phase', 'observedGeneration', 'currentAllocation']),
    ];
    for (const [i, body] of crds.entries()) {
      const file = path.join(dir, `peer-crd-${i}.json`);
      writeFileSync(file, JSON.stringify(body));
      const r = await run(kubectlBin, ['--kubeconfig', cp.kubeconfig, 'create', '-f', file]);
      expect(r.code, r.err).toBe(0);
    }
    await waitFor('the peer CRDs to be established', 60_000, async () => {
      const r = await run(kubectlBin, ['--kubeconfig', cp.kubeconfig, 'wait', '--for=condition=Established', '--timeout=5s', 'crd/modelservings.workload.serving.volcano.sh', 'crd/variantautoscalings.llmd.ai']);
      return r.code === 0;
    });
    const objects = kc.makeApiClient(CustomObjectsApi);
    await objects.createNamespacedCustomObject({ group: 'workload.serving.volcano.sh', version: 'v1alpha1', namespace: 'default', plural: 'modelservings', body: msManifest('llama', 'default') });
    await objects.createNamespacedCustomObject({ group: 'llmd.ai', version: 'v1alpha1', namespace: 'default', plural: 'variantautoscalings', body: { apiVersion: 'llmd.ai/v1alpha1', kind: 'VariantAutoscaling', metadata: { name: 'llama-va', namespace: 'default' }, spec: { modelID: 'meta/llama', scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'llama-decode' } } } });
    // What the issue describes: the peer's schema prunes Ripple's status.
    const pruned = z.object({ status: z.record(z.string(), z.unknown()).optional() }).passthrough().parse(
      await objects.patchNamespacedCustomObjectStatus({ group: 'workload.serving.volcano.sh', version: 'v1alpha1', namespace: 'default', plural: 'modelservings', name: 'llama', body: [{ op: 'add', path: '/status', value: { phase: 'Pending', observedGeneration: 1 } }] }),
    );
    expect(pruned.status).toEqual({ observedGeneration: 1 });
    await kc.makeApiClient(AdmissionregistrationV1Api).createValidatingWebhookConfiguration({
      body: {
        metadata: { name: 'kthena-validating' },
        webhooks: [{ name: 'validate.modelserving.volcano.sh', admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Fail', clientConfig: { service: { namespace: 'kthena-system', name: 'kthena-webhook', port: 443 } }, rules: [{ apiGroups: ['workload.serving.volcano.sh'], apiVersions: ['v1alpha1'], resources: ['modelservings', 'modelservings/status'], operations: ['CREATE', 'UPDATE'] }] }],
      },
    });

    const doctor = (extra: string[] = []) => run(process.execPath, [path.join(root, 'bin', 'ripple.js'), 'doctor', '--kubeconfig', cp.kubeconfig, '--redis-url', sb.redisUrl, '--prometheus-url', prometheus.url, ...extra]);
    const before = await doctor(['-o', 'json']);
    expect(before.code).toBe(1);
    const problems = z.object({ findings: z.array(findingSchema) }).parse(JSON.parse(before.out)).findings.filter((f) => !f.ok);
    expect(problems.map((f) => f.check)).toEqual(['CRD modelservings.workload.serving.volcano.sh', 'CRD variantautoscalings.llmd.ai', 'ValidatingWebhookConfiguration kthena-validating']);
    expect(problems[0]!.message).toContain('would prune status.phase, status.roles, status.lastProgressTime');
    expect(problems[1]!.message).toContain('would prune status.phase, status.observedGeneration, status.currentAllocation');
    console.log(`ripple doctor on the migration test's cluster, before:\n${(await doctor()).out}`);

    // docs/migration.md, "Switch", steps 2 and 3 (the peers' controllers never ran here).
    const del = await run(kubectlBin, ['--kubeconfig', cp.kubeconfig, 'delete', 'validatingwebhookconfiguration', 'kthena-validating']);
    expect(del.code, del.err).toBe(0);
    const apply = await run(kubectlBin, ['--kubeconfig', cp.kubeconfig, 'apply', '--server-side', '--force-conflicts', '-f', path.join(root, 'charts/ripple/crds/')]);
    expect(apply.err).toBe('');
    expect(apply.code).toBe(0);
    const after = await doctor();
    console.log(`ripple doctor on the migration test's cluster, after:\n${after.out}`);
    expect(after.code, after.out).toBe(0);

    // Ripple runs and writes its status; the API server keeps it now.
    ripple = await startCli(['all', '--ops-port', '0', '--kubeconfig', cp.kubeconfig, '--redis-url', sb.redisUrl], { RIPPLE_PREFIX: sb.prefix, RIPPLE_NAMESPACE: 'ripple-system' });
    const phaseOf = async (group: string, plural: string, name: string) =>
      z.object({ status: z.object({ phase: z.string().optional() }).passthrough().optional() }).passthrough().parse(await objects.getNamespacedCustomObject({ group, version: 'v1alpha1', namespace: 'default', plural, name })).status?.phase;
    const ms = await waitFor('the ModelServing to get a phase', 90_000, async () => (await phaseOf('workload.serving.volcano.sh', 'modelservings', 'llama')) ?? false, 500);
    const va = await waitFor('the VariantAutoscaling to get a phase', 90_000, async () => (await phaseOf('llmd.ai', 'variantautoscalings', 'llama-va')) ?? false, 500);
    console.log(`migration: ModelServing phase ${ms}, VariantAutoscaling phase ${va}`);
  }, 300_000);
});
