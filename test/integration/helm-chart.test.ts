import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { allFunctions } from '../../functions/index.js';
import { loadProcessConfig } from '../../runtime/config.js';
import { parseDispatchTargets } from '../../runtime/dispatcher.js';
import { graceDeleteWebhook } from '../../functions/ops-lifecycle/admission/grace-delete.js';
import { generateCa } from '../../runtime/webhook/certs.js';
import { mutatingWebhookConfiguration } from '../../runtime/webhook/registration.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The Helm chart (charts/ripple) with Helm built from the Go module proxy (infra/local-control-plane/
// build-helm.sh): lint, a strict server-side dry run of every mode, the schema's refusals, and a real
// install → compare with the kustomize all-in-one overlay → run the release's process from the checkout
// under the release's own ServiceAccount → upgrade → uninstall, on the sandbox's real API server.
// Knative, KEDA, the Prometheus Operator and the OpenFaaS operator are not installed in the sandbox:
// minimal CRDs for the one kind of each the chart uses are installed here (typed for the fields the
// chart sets, so a wrong type is refused), like infra-manifests.test.ts does.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const chart = path.join(root, 'charts', 'ripple');
const bin = path.join(root, '.cache', 'control-plane', 'bin');
const helmBin = path.join(bin, 'helm');
const kubectlBin = existsSync(path.join(bin, 'kubectl')) ? path.join(bin, 'kubectl') : 'kubectl';
const FUNCTIONS = ['reconcile-modelserving', 'reconcile-autoscaler', 'ops-lifecycle', 'emit-events'];

let sb: TestSandbox;
let kubeconfig: string;
let work: string;
let fnNamespace: string;
const installedCrds: string[] = [];

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}
function run(cmd: string, args: string[], input?: string): Run {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, HELM_CACHE_HOME: path.join(work, 'cache'), HELM_CONFIG_HOME: path.join(work, 'config'), HELM_DATA_HOME: path.join(work, 'data') } });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}
function runAsync(cmd: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ status: code ?? 1, stdout, stderr }));
  });
}
const kubectl = (args: string[], input?: string) => run(kubectlBin, ['--kubeconfig', kubeconfig, ...args], input);
const helm = (args: string[]) => run(helmBin, ['--kubeconfig', kubeconfig, ...args]);
function ok(r: Run, what: string): string {
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}):\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

const objectSchema = z
  .object({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: z.object({ name: z.string(), namespace: z.string().optional(), labels: z.record(z.string(), z.string()).optional() }).passthrough(),
  })
  .passthrough();
type K8sObject = z.infer<typeof objectSchema>;
function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((d) => d !== null)
    .map((d) => objectSchema.parse(d));
}

const envVarSchema = z.object({ name: z.string(), value: z.string().optional(), valueFrom: z.record(z.string(), z.record(z.string(), z.unknown())).optional() }).strict();
const containerSchema = z
  .object({
    image: z.string(),
    args: z.array(z.string()).default([]),
    env: z.array(envVarSchema).default([]),
    envFrom: z.array(z.object({ configMapRef: z.object({ name: z.string() }) })).default([]),
  })
  .passthrough();
const spec = (o: K8sObject) => z.object({ spec: z.record(z.string(), z.unknown()).default({}) }).passthrough().parse(o).spec;
/** Anything with a pod template: a Deployment, a Knative Service. */
const podSchema = z.object({ spec: z.object({ template: z.object({ spec: z.object({ containers: z.array(containerSchema) }).passthrough() }) }) });
const deploymentSchema = z.object({
  spec: z.object({
    replicas: z.number(),
    template: z.object({
      metadata: z.object({ labels: z.record(z.string(), z.string()), annotations: z.record(z.string(), z.string()).default({}) }),
      spec: z.object({ serviceAccountName: z.string().optional(), containers: z.array(containerSchema) }).passthrough(),
    }),
  }),
});

const TOKEN = 'a-function-token-of-32-characters';
const MONITORING = ['--set', 'monitoring.podMonitor.enabled=true', '--set', 'monitoring.prometheusRule.enabled=true', '--set', 'monitoring.dashboard.enabled=true', '--set', 'networkPolicy.enabled=true'];
/** A value for each way of running Ripple; every platform kind the chart can render is in one of them. */
const MODES: Record<string, string[]> = {
  'all-in-one': [],
  'scaled with KEDA and monitoring': ['--set', 'mode=scaled', '--set', 'keda.enabled=true', ...MONITORING, '--set', 'redis.deploy=false', '--set', 'redis.url=redis://redis.example:6379'],
  'serverless on Knative': ['--set', 'mode=serverless', '--set', `functionToken.value=${TOKEN}`, ...MONITORING],
  'serverless on OpenFaaS': ['--set', 'mode=serverless', '--set', 'serverless.platform=openfaas', '--set', `functionToken.value=${TOKEN}`, ...MONITORING],
  'serverless on Kubernetes with KEDA': ['--set', 'mode=serverless', '--set', 'serverless.platform=kubernetes', '--set', `functionToken.value=${TOKEN}`, ...MONITORING],
};
/** The values files the docs show (charts/ripple/examples), each a way a platform team installs Ripple. */
const EXAMPLES = readdirSync(path.join(chart, 'examples')).filter((f) => f.endsWith('.yaml')).sort();
/** Secrets the examples name, created (with these keys) in the test's namespace before the dry runs. */
const EXAMPLE_SECRETS: Record<string, Record<string, string>> = {
  'ripple-redis': { url: 'rediss://:pw@redis.example:6380' },
  'ripple-redis-ca': { 'ca.crt': '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' },
  'ripple-ops-token': { token: 'an-ops-token-of-32-characters-xx' },
  'ripple-function-token': { token: TOKEN },
};

// ---- minimal CRDs of the platform kinds the chart renders ----
const str = { type: 'string' };
const int = { type: 'integer' };
const bool = { type: 'boolean' };
const preserve = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
const stringMap = { type: 'object', additionalProperties: str };
const looseArray = { type: 'array', items: preserve };
function crd(group: string, kind: string, plural: string, version: string, spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { kind, plural, listKind: `${kind}List`, singular: kind.toLowerCase() },
      scope: 'Namespaced',
      versions: [{ name: version, served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', ...spec }, status: preserve } } } }],
    },
  };
}
const PLATFORM_CRDS = [
  crd('keda.sh', 'ScaledObject', 'scaledobjects', 'v1alpha1', {
    required: ['scaleTargetRef', 'triggers'],
    properties: {
      scaleTargetRef: { type: 'object', required: ['name'], properties: { name: str, kind: str, apiVersion: str } },
      minReplicaCount: int,
      maxReplicaCount: int,
      pollingInterval: int,
      cooldownPeriod: int,
      advanced: { type: 'object', properties: { horizontalPodAutoscalerConfig: { type: 'object', properties: { name: str, behavior: preserve } } } },
      triggers: { type: 'array', items: { type: 'object', required: ['type', 'metadata'], properties: { type: str, name: str, metadata: stringMap } } },
    },
  }),
  crd('serving.knative.dev', 'Service', 'services', 'v1', {
    properties: {
      template: {
        type: 'object',
        properties: {
          metadata: { type: 'object', properties: { labels: stringMap, annotations: stringMap } },
          spec: {
            type: 'object',
            properties: {
              serviceAccountName: str,
              containerConcurrency: int,
              timeoutSeconds: int,
              imagePullSecrets: looseArray,
              containers: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    name: str,
                    image: str,
                    imagePullPolicy: str,
                    args: { type: 'array', items: str },
                    ports: { type: 'array', items: { type: 'object', required: ['containerPort'], properties: { name: str, containerPort: int } } },
                    env: looseArray,
                    envFrom: looseArray,
                    readinessProbe: preserve,
                    livenessProbe: preserve,
                    resources: preserve,
                    securityContext: preserve,
                    volumeMounts: looseArray,
                  },
                },
              },
              volumes: looseArray,
              nodeSelector: stringMap,
              affinity: preserve,
              tolerations: looseArray,
              priorityClassName: str,
              topologySpreadConstraints: looseArray,
            },
          },
        },
      },
    },
  }),
  // The Prometheus Operator's PodMonitor and PrometheusRule (monitoring.coreos.com/v1), for the fields the chart sets.
  crd('monitoring.coreos.com', 'PodMonitor', 'podmonitors', 'v1', {
    required: ['selector'],
    properties: {
      selector: { type: 'object', properties: { matchLabels: stringMap } },
      namespaceSelector: { type: 'object', properties: { any: bool, matchNames: { type: 'array', items: str } } },
      podMetricsEndpoints: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            port: str,
            targetPort: { 'x-kubernetes-int-or-string': true },
            path: str,
            interval: { type: 'string', pattern: '^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$' },
            relabelings: { type: 'array', items: { type: 'object', properties: { sourceLabels: { type: 'array', items: str }, targetLabel: str, action: str, regex: str, replacement: str } } },
          },
        },
      },
    },
  }),
  crd('monitoring.coreos.com', 'PrometheusRule', 'prometheusrules', 'v1', {
    properties: {
      groups: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name', 'rules'],
          properties: {
            name: str,
            rules: { type: 'array', items: { type: 'object', required: ['expr'], properties: { record: str, alert: str, expr: { 'x-kubernetes-int-or-string': true }, for: str, labels: stringMap, annotations: stringMap } } },
          },
        },
      },
    },
  }),
  // The OpenFaaS operator's Function (openfaas.com/v1), for the fields the chart sets.
  crd('openfaas.com', 'Function', 'functions', 'v1', {
    required: ['name', 'image'],
    properties: {
      name: str,
      image: str,
      labels: stringMap,
      annotations: stringMap,
      environment: stringMap,
      secrets: { type: 'array', items: str },
      readOnlyRootFilesystem: bool,
      requests: { type: 'object', properties: { cpu: str, memory: str } },
      limits: { type: 'object', properties: { cpu: str, memory: str } },
    },
  }),
  // cert-manager's Certificate and Issuer (cert-manager.io/v1), for the fields the chart's webhooks set.
  crd('cert-manager.io', 'Certificate', 'certificates', 'v1', {
    required: ['secretName', 'issuerRef'],
    properties: {
      secretName: str,
      isCA: bool,
      commonName: str,
      dnsNames: { type: 'array', items: str },
      duration: str,
      renewBefore: str,
      usages: { type: 'array', items: { type: 'string', enum: ['server auth', 'client auth', 'digital signature', 'key encipherment'] } },
      privateKey: { type: 'object', properties: { algorithm: { type: 'string', enum: ['RSA', 'ECDSA', 'Ed25519'] }, size: int, rotationPolicy: { type: 'string', enum: ['Never', 'Always'] } } },
      issuerRef: { type: 'object', required: ['name'], properties: { name: str, kind: str, group: str } },
    },
  }),
  crd('cert-manager.io', 'Issuer', 'issuers', 'v1', {
    properties: { selfSigned: { type: 'object' }, ca: { type: 'object', required: ['secretName'], properties: { secretName: str } } },
  }),
];

beforeAll(async () => {
  if (!existsSync(helmBin)) throw new Error(`${helmBin} is missing: run bash infra/local-control-plane/build-helm.sh (scripts/ensure-deps.sh does)`);
  sb = await openSandbox('helm');
  kubeconfig = inject('kubeconfig');
  work = mkdtempSync(path.join(tmpdir(), 'ripple-helm-'));
  fnNamespace = `${sb.namespace}-fn`;
  ok(kubectl(['create', 'namespace', fnNamespace]), 'creating the OpenFaaS function namespace');
  // The API server's PodSecurity admission judges every pod template of the dry runs against the
  // "restricted" standard and warns (on stderr, which the dry runs require empty) at any violation.
  ok(kubectl(['label', 'namespace', sb.namespace, 'pod-security.kubernetes.io/warn=restricted', 'pod-security.kubernetes.io/warn-version=latest']), 'labelling the namespace');
  for (const [name, data] of Object.entries(EXAMPLE_SECRETS)) {
    const args = Object.entries(data).flatMap(([k, v]) => ['--from-literal', `${k}=${v}`]);
    ok(kubectl(['create', 'secret', 'generic', name, '-n', sb.namespace, ...args]), `secret ${name}`);
  }
  for (const c of PLATFORM_CRDS) {
    const name = z.object({ metadata: z.object({ name: z.string() }) }).parse(c).metadata.name;
    // A cluster that already serves the kind is validated against that (another test may own it), unless
    // it is on its way out (an earlier file deleted it without waiting): then wait, and install ours.
    const existing = kubectl(['get', 'crd', name, '-o', 'jsonpath={.metadata.deletionTimestamp}']);
    if (existing.status === 0 && existing.stdout.trim() === '') continue;
    if (existing.status === 0) ok(kubectl(['wait', '--for=delete', `crd/${name}`, '--timeout=120s']), `${name} to be deleted`);
    ok(kubectl(['create', '-f', '-'], JSON.stringify(c)), `installing ${name}`);
    installedCrds.push(name);
  }
  if (installedCrds.length) ok(kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...installedCrds.map((n) => `crd/${n}`)]), 'CRDs established');
});
afterAll(async () => {
  // Waited for: a CRD still terminating would look installed to the next file's check, then vanish under it.
  if (installedCrds.length) kubectl(['delete', 'crd', ...installedCrds, '--wait=true', '--timeout=60s']);
  kubectl(['delete', 'namespace', fnNamespace, '--wait=false']);
  await sb?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** `helm template` of the chart into the test's namespaces. */
function template(args: string[], release = 'ripple'): Run {
  return helm(['template', release, chart, '--namespace', sb.namespace, '--set', `serverless.openfaas.functionNamespace=${fnNamespace}`, ...args]);
}

describe('charts/ripple', () => {
  it('helm lint passes for every mode, with no warnings', () => {
    expect(ok(run(helmBin, ['version', '--short']), 'helm version')).toMatch(/^v3\.22\.0/);
    for (const [mode, args] of Object.entries(MODES)) {
      const r = run(helmBin, ['lint', '--strict', chart, ...args]);
      expect(r.status, `${mode}:\n${r.stdout}${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
      expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });

  it.each(Object.keys(MODES))('helm template (%s) passes a strict server-side dry run, CRDs included', (mode) => {
    const text = ok(template(['--include-crds', ...MODES[mode]!]), `helm template ${mode}`);
    const objects = parseObjects(text);
    expect(objects.length).toBeGreaterThan(10);
    // --force-conflicts: the CRDs are owned by whoever installed them (the global setup); the rest is new.
    const r = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '--force-conflicts', '--field-manager=ripple-helm-test', '-f', '-'], text);
    expect(r.stderr, `${mode}:\n${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(objects.length);
    for (const line of lines) expect(line).toMatch(/serverside-applied \(server dry run\)$/);
    const kinds = new Set(objects.map((o) => o.kind));
    if (mode.startsWith('scaled')) for (const k of ['ScaledObject', 'PodMonitor', 'PrometheusRule', 'NetworkPolicy', 'PodDisruptionBudget']) expect(kinds, k).toContain(k);
    if (mode.includes('Knative')) expect(objects.filter((o) => o.apiVersion === 'serving.knative.dev/v1')).toHaveLength(FUNCTIONS.length);
    if (mode.includes('OpenFaaS')) {
      const fns = objects.filter((o) => o.kind === 'Function');
      expect(fns).toHaveLength(FUNCTIONS.length);
      // The functions and their identities live in OpenFaaS's namespace; the autoscaler's grant stays home.
      for (const o of objects.filter((x) => x.kind === 'Function' || (x.kind === 'ServiceAccount' && x.metadata.name.includes('-worker-')))) expect(o.metadata.namespace, o.metadata.name).toBe(fnNamespace);
      // The dispatcher sends the token the functions expect: the given value, in both namespaces.
      const secrets = objects.filter((o) => o.kind === 'Secret' && o.metadata.name === 'ripple-function-token');
      const values = secrets.map((o) => Object.values(z.object({ data: z.record(z.string(), z.string()) }).passthrough().parse(o).data));
      expect(secrets.map((o) => o.metadata.namespace).sort()).toEqual([sb.namespace, fnNamespace].sort());
      expect(values[0]).toHaveLength(1);
      expect(values[1]).toEqual(values[0]);
      expect(Buffer.from(values[0]![0]!, 'base64').toString('utf8')).toBe(TOKEN);
    }
  });

  it.each(EXAMPLES)('the documented values file examples/%s passes helm lint and a strict server-side dry run', (file) => {
    const values = ['-f', path.join(chart, 'examples', file)];
    const lint = run(helmBin, ['lint', '--strict', chart, ...values]);
    expect(lint.status, `${lint.stdout}${lint.stderr}`).toBe(0);
    expect(lint.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    const text = ok(template(values), `helm template -f ${file}`);
    const objects = parseObjects(text);
    const r = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '--force-conflicts', '--field-manager=ripple-helm-test', '-f', '-'], text);
    expect(r.stderr, `${file}:\n${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(objects.length);
  });

  it('the rendered processes run commands `ripple` accepts, with an environment it accepts', async () => {
    const checked = new Map<string, string[]>();
    for (const [mode, args] of Object.entries(MODES)) {
      const objects = parseObjects(ok(template(args), mode));
      const configMap = z.object({ data: z.record(z.string(), z.string()) }).passthrough().parse(objects.find((o) => o.kind === 'ConfigMap'));
      // Deployments and Knative Services: a pod template running the image with arguments.
      const workloads = objects.filter((o) => (o.kind === 'Deployment' || o.kind === 'Service') && o.metadata.labels?.['app.kubernetes.io/component'] !== 'redis' && spec(o).template !== undefined);
      expect(workloads.length, mode).toBeGreaterThan(0);
      for (const d of workloads) {
        const c = podSchema.parse(d).spec.template.spec.containers[0]!;
        checked.set(c.args.join(' '), c.args);
        // The environment the pod would have (Secrets and fieldRefs stand in with plausible values).
        const env: Record<string, string> = { ...configMap.data };
        for (const e of c.env) env[e.name] = e.value ?? (e.name === 'REDIS_URL' ? 'redis://redis:6379' : e.valueFrom?.fieldRef ? sb.namespace : 'a-token-of-at-least-16-chars');
        const config = loadProcessConfig(env);
        expect(config.RIPPLE_IN_CLUSTER).toBe('true');
        if (c.args[0] === 'worker' && c.args.includes('--dispatch')) {
          const targets = parseDispatchTargets(c.args.filter((_, i) => c.args[i - 1] === '--dispatch'));
          expect(targets.map((t) => t.fn).sort()).toEqual([...FUNCTIONS].sort());
          expect(config.RIPPLE_FUNCTION_TOKEN).toBeDefined();
        }
      }
      // OpenFaaS passes no arguments: its Functions choose `serve` by environment, secrets as files.
      for (const f of objects.filter((o) => o.kind === 'Function')) {
        const fn = z.object({ spec: z.object({ environment: z.record(z.string(), z.string()), secrets: z.array(z.string()) }).passthrough() }).parse(f).spec;
        const env: Record<string, string> = {};
        for (const [k, v] of Object.entries(fn.environment)) {
          if (!k.endsWith('_FILE')) env[k] = v;
          else {
            expect(fn.secrets).toContain(path.basename(v));
            expect(v).toBe(`/var/openfaas/secrets/${path.basename(v)}`);
            env[k] = path.join(work, path.basename(v));
            writeFileSync(env[k], k.startsWith('REDIS') ? 'redis://redis:6379\n' : 'a-token-of-at-least-16-chars\n');
          }
        }
        const config = loadProcessConfig(env);
        expect(config.RIPPLE_MODE).toBe('serve');
        expect(FUNCTIONS).toContain(config.RIPPLE_FUNCTION);
        expect(config.RIPPLE_FUNCTION_TOKEN).toBe('a-token-of-at-least-16-chars');
      }
    }
    // all, watcher, ops, a worker and a `serve` per function (Knative's and plain Kubernetes' alike), and the
    // dispatcher for Knative, OpenFaaS and plain Kubernetes (--hold-until-ready).
    expect(checked.size).toBe(3 + 2 * FUNCTIONS.length + 3);
    // The image's entrypoint is `node --import tsx cli/ripple.ts`: the same CLI as bin/ripple.js, whose
    // argument parser is strict (an unknown flag fails). One run per distinct command line, two at a time.
    const lines = [...checked.values()];
    const results: Array<{ args: string[]; help: Run }> = [];
    const next = async (): Promise<void> => {
      for (let args = lines.shift(); args; args = lines.shift()) results.push({ args, help: await runAsync(process.execPath, [path.join(root, 'bin', 'ripple.js'), ...args, '--help']) });
    };
    await Promise.all([next(), next()]);
    expect(results).toHaveLength(checked.size);
    for (const { args, help } of results) {
      expect(help.status, `ripple ${args.join(' ')} --help\n${help.stderr}`).toBe(0);
      const modes = /^usage: ripple <([a-z|]+)>/m.exec(help.stdout)?.[1]?.split('|') ?? [];
      expect(modes, `ripple ${args.join(' ')} --help:\n${help.stdout}${help.stderr}`).toContain(args[0]);
    }
  }, 600_000);

  it('the schema and the chart refuse bad values with a message naming the value', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--set', 'mode=sclaed'], /at '\/mode': value must be one of 'all-in-one', 'scaled', 'serverless'/],
      [['--set', 'workers.replica=2'], /at '\/workers': additional properties 'replica' not allowed/],
      [['--set', 'config.logLevel=verbose'], /at '\/config\/logLevel': value must be one of/],
      [['--set-string', 'allInOne.replicas=two'], /at '\/allInOne\/replicas': got string, want integer/],
      [['--set', 'opsToken.generate=true'], /at '\/opsToken': additional properties 'generate' not allowed/],
      [['--set', 'workers.perFunction.reconcile-modelservings.replicas=2'], /workers\.perFunction\.reconcile-modelservings: no such function; give one of reconcile-modelserving, reconcile-autoscaler, ops-lifecycle, emit-events \(Ripple's own, then extraFunctions\)/],
      [['--set', 'workers.perFunction.Emit_Events.replicas=2'], /invalid propertyName 'Emit_Events'[\s\S]*does not match pattern/],
      [['--set', 'monitoring.prometheusRule.runbookBaseUrl=docs.example'], /at '\/monitoring\/prometheusRule\/runbookBaseUrl'/],
      [['--set', 'mode=serverless'], /mode=serverless needs a function token .*functionToken.existingSecret .* or functionToken.value/],
      [['--set', 'opsToken.value=short'], /at '\/opsToken\/value': minLength: got 5, want 16/],
      [['--set', 'redis.deploy=false'], /redis: give exactly one of redis.deploy=true \(a demo Redis\), redis.url or redis.existingSecret \(0 given\)/],
      [['--set', 'keda.enabled=true'], /keda.enabled scales the worker Deployments, which only mode=scaled has/],
    ];
    for (const [args, message] of cases) {
      const r = template(args);
      expect(r.status, args.join(' ')).not.toBe(0);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('the chart ships the CRDs of infra/crds, and its crds/ directory applies over the installed ones (the upgrade path)', () => {
    // Links, not copies: the CRDs and the RBAC rules have one source each, shared with kustomize.
    expect(realpathSync(path.join(chart, 'crds'))).toBe(realpathSync(path.join(root, 'infra', 'crds')));
    expect(realpathSync(path.join(chart, 'files', 'rbac'))).toBe(realpathSync(path.join(root, 'infra', 'deploy', 'rbac')));
    const ours = readdirSync(path.join(root, 'infra', 'crds')).sort();
    // What Helm installs from crds/: every CRD of infra/crds.
    const shown = parseObjects(ok(template(['--include-crds']), 'helm template --include-crds')).filter((o) => o.kind === 'CustomResourceDefinition');
    const expected = ours.flatMap((f) => parseObjects(readFileSync(path.join(root, 'infra', 'crds', f), 'utf8')));
    expect(shown).toEqual(expected);
    const r = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '--force-conflicts', '--field-manager=ripple-helm-test', '-f', `${path.join(chart, 'crds')}/`]);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toHaveLength(ours.length);
    for (const line of r.stdout.trim().split('\n')) expect(line).toMatch(/^customresourcedefinition\.apiextensions\.k8s\.io\/\S+ serverside-applied \(server dry run\)$/);
  });

  it('helm template of the scaled mode matches the kustomize scaled overlay', () => {
    const mine = parseObjects(ok(helm(['template', 'ripple', chart, '--namespace', 'ripple-system', '--set', 'mode=scaled', '--set', 'keda.enabled=true', '--set', 'redis.deploy=false', '--set', 'redis.url=redis://redis.example:6379', '--set', 'opsToken.existingSecret=ripple-ops-token']), 'helm template'));
    expectLikeOverlay(mine, 'scaled', {
      rename: (n) => n,
      onlyTheirs: ['Namespace/ripple-system'],
      // The overlay leaves the Redis URL to the operator (the ops token is the overlay's Secret here too); the
      // chart runs two ops replicas under a PDB.
      onlyMine: ['Secret/ripple-redis', 'PodDisruptionBudget/ripple-ops'],
      replicas: { 'Deployment/ripple-ops': 2 },
    });
  });

  it('helm template of the serverless mode matches the kustomize serverless overlay, but for the function names', () => {
    const mine = parseObjects(ok(helm(['template', 'ripple', chart, '--namespace', 'ripple-system', '--set', 'mode=serverless', '--set', `functionToken.value=${TOKEN}`, '--set', 'redis.deploy=false', '--set', 'redis.url=redis://redis.example:6379', '--set', 'opsToken.existingSecret=ripple-ops-token']), 'helm template'));
    // The chart names Knative Services `<fullname>-<function>` (two releases must not collide); the
    // overlay names them after the function. The dispatcher's URLs follow the names.
    const fnNames = new RegExp(`(^|=http://)ripple-(${FUNCTIONS.join('|')})(?=$|\\.)`);
    expectLikeOverlay(mine, 'serverless', {
      rename: (n) => n.replace(fnNames, '$1$2'),
      onlyTheirs: ['Namespace/ripple-system'],
      onlyMine: ['Secret/ripple-function-token', 'Secret/ripple-redis', 'PodDisruptionBudget/ripple-ops'],
      replicas: { 'Deployment/ripple-ops': 2 },
      // The chart states the dispatcher's call timeout (the overlay relies on Ripple's default, the same value).
      extraEnv: { 'Deployment/ripple-dispatcher': { RIPPLE_DISPATCH_TIMEOUT_MS: '300000' } },
    });
  });

  it("the chart's PrometheusRule holds exactly the groups of infra/alerts/ripple-rules.yaml (one source), runbook URLs movable", () => {
    const source = z.object({ groups: z.array(z.unknown()) }).passthrough().parse(parseAllDocuments(readFileSync(path.join(root, 'infra/alerts/ripple-rules.yaml'), 'utf8'))[0]!.toJS());
    const ruleOf = (args: string[]) => {
      const o = parseObjects(ok(template(['--set', 'monitoring.prometheusRule.enabled=true', ...args]), 'template')).find((x) => x.kind === 'PrometheusRule');
      return z.object({ spec: z.object({ groups: z.array(z.unknown()) }) }).parse(o).spec.groups;
    };
    expect(ruleOf([])).toEqual(source.groups);
    // A team's own runbooks: every runbook_url moves, nothing else changes.
    const moved = JSON.stringify(ruleOf(['--set', 'monitoring.prometheusRule.runbookBaseUrl=https://wiki.example/ripple/']));
    expect(moved).not.toContain('github.com/ripple-dev');
    expect(JSON.parse(moved.replaceAll('https://wiki.example/ripple', 'https://github.com/ripple-dev/ripple/blob/main/docs/runbooks.md'))).toEqual(source.groups);
    expect(moved.match(/https:\/\/wiki\.example\/ripple#ripple\w+/g)).toHaveLength(7);
    // Off by default.
    expect(parseObjects(ok(template([]), 'template')).some((x) => x.kind === 'PrometheusRule')).toBe(false);
  });

  it('the Grafana dashboard ConfigMap holds infra/grafana/ripple.json as it is', () => {
    const o = parseObjects(ok(template(['--set', 'monitoring.dashboard.enabled=true']), 'template')).find((x) => x.kind === 'ConfigMap' && x.metadata.name === 'ripple-dashboard');
    const cm = z.object({ metadata: z.object({ labels: z.record(z.string(), z.string()) }).passthrough(), data: z.object({ 'ripple.json': z.string() }) }).passthrough().parse(o);
    expect(JSON.parse(cm.data['ripple.json'])).toEqual(JSON.parse(readFileSync(path.join(root, 'infra/grafana/ripple.json'), 'utf8')));
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
  });

  it.each(Object.keys(MODES))('the PodMonitor scrapes every Ripple process of %s, on a port the pod has', (mode) => {
    const objects = parseObjects(ok(template([...MODES[mode]!, '--set', 'monitoring.podMonitor.enabled=true']), 'template'));
    const monitorSchema = z.object({
      metadata: z.object({ namespace: z.string().optional() }).passthrough(),
      spec: z.object({
        selector: z.object({ matchLabels: z.record(z.string(), z.string()) }),
        namespaceSelector: z.object({ matchNames: z.array(z.string()) }).optional(),
        podMetricsEndpoints: z.array(z.object({ port: z.string().optional(), targetPort: z.number().optional(), path: z.literal('/metrics') }).passthrough()),
      }),
    });
    const monitors = objects.filter((o) => o.kind === 'PodMonitor').map((o) => monitorSchema.parse(o));
    expect(monitors.length).toBeGreaterThan(0);
    // Every Ripple process: Deployments (but the demo Redis), Knative Services and OpenFaaS Functions.
    const processes: Array<{ what: string; namespace: string; labels: Record<string, string>; ports: Array<string | number> }> = [];
    for (const o of objects) {
      if (o.metadata.labels?.['app.kubernetes.io/component'] === 'redis') continue;
      if (o.kind === 'Deployment' || o.apiVersion === 'serving.knative.dev/v1') {
        const t = z.object({ spec: z.object({ template: z.object({ metadata: z.object({ labels: z.record(z.string(), z.string()) }), spec: z.object({ containers: z.array(z.object({ ports: z.array(z.object({ name: z.string().optional(), containerPort: z.number() })).default([]) }).passthrough()) }).passthrough() }) }) }).parse(o).spec.template;
        processes.push({ what: `${o.kind}/${o.metadata.name}`, namespace: o.metadata.namespace ?? sb.namespace, labels: t.metadata.labels, ports: t.spec.containers.flatMap((c) => c.ports.flatMap((p) => [p.containerPort, ...(p.name ? [p.name] : [])])) });
      }
      if (o.kind === 'Function') {
        const f = z.object({ spec: z.object({ labels: z.record(z.string(), z.string()) }).passthrough() }).parse(o).spec;
        processes.push({ what: `Function/${o.metadata.name}`, namespace: o.metadata.namespace!, labels: f.labels, ports: [8080] });
      }
    }
    expect(processes.length).toBeGreaterThan(0);
    const unscraped = processes.filter(
      (p) =>
        !monitors.some(
          (m) =>
            (m.spec.namespaceSelector ? m.spec.namespaceSelector.matchNames.includes(p.namespace) : p.namespace === (m.metadata.namespace ?? sb.namespace)) &&
            Object.entries(m.spec.selector.matchLabels).every(([k, v]) => p.labels[k] === v) &&
            m.spec.podMetricsEndpoints.some((e) => (e.port !== undefined && p.ports.includes(e.port)) || (e.targetPort !== undefined && p.ports.includes(e.targetPort))),
        ),
    );
    expect(unscraped.map((p) => p.what)).toEqual([]);
  });

  it.each(Object.keys(MODES))('helm template (%s) renders the same objects every time: no generated token, no lookup', (mode) => {
    const first = ok(template(MODES[mode]!), 'template');
    expect(ok(template(MODES[mode]!), 'template again')).toBe(first);
    for (const f of readdirSync(path.join(chart, 'templates'), { recursive: true, encoding: 'utf8' }).filter((x) => /\.(ya?ml|tpl)$/.test(x))) {
      // Comments may name what is not used.
      const text = readFileSync(path.join(chart, 'templates', f), 'utf8').replace(/\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/g, '');
      expect(text, f).not.toMatch(/\blookup\b|\brand(AlphaNum|Alpha|Numeric|Ascii)\b|\buuidv4\b/);
    }
  });

  it.each(Object.keys(MODES))("every Ripple pod of %s meets OpenShift's restricted-v2: no fixed uid, non-root, no escalation, no capabilities, RuntimeDefault seccomp", (mode) => {
    const objects = parseObjects(ok(template(MODES[mode]!), 'template'));
    const sc = z.object({ runAsNonRoot: z.boolean().optional(), runAsUser: z.number().optional(), allowPrivilegeEscalation: z.boolean().optional(), capabilities: z.object({ drop: z.array(z.string()) }).optional(), seccompProfile: z.object({ type: z.string() }).optional() }).passthrough();
    const pods = objects.filter((o) => (o.kind === 'Deployment' || o.apiVersion === 'serving.knative.dev/v1') && o.metadata.labels?.['app.kubernetes.io/component'] !== 'redis');
    expect(pods.length).toBeGreaterThan(0);
    for (const o of pods) {
      const pod = z.object({ spec: z.object({ template: z.object({ spec: z.object({ securityContext: sc.optional(), containers: z.array(z.object({ securityContext: sc.optional() }).passthrough()) }).passthrough() }) }) }).parse(o).spec.template.spec;
      for (const c of pod.containers) {
        const eff = { ...pod.securityContext, ...c.securityContext };
        const what = `${o.kind}/${o.metadata.name}`;
        expect(eff.runAsUser, what).toBeUndefined();
        expect(eff.runAsNonRoot, what).toBe(true);
        expect(eff.allowPrivilegeEscalation, what).toBe(false);
        expect(eff.capabilities?.drop, what).toEqual(['ALL']);
        expect(eff.seccompProfile?.type, what).toBe('RuntimeDefault');
      }
    }
  });

  it('per-component pod settings: resources, env, volumes, scheduling and priority per component; a Redis CA everywhere; a startupProbe', () => {
    const values = path.join(work, 'per-component.yaml');
    writeFileSync(
      values,
      [
        'mode: scaled',
        'priorityClassName: ripple-high',
        'nodeSelector: { pool: platform }',
        'ops: { nodeSelector: { pool: ops } }',
        'watcher:',
        '  resources: { requests: { cpu: 333m } }',
        '  tolerations: [{ key: watchers, operator: Exists }]',
        'workers:',
        '  perFunction:',
        '    emit-events: { replicas: 3, extraEnv: [{ name: EXTRA, value: "yes" }] }',
        'extraVolumes: [{ name: cfg, configMap: { name: ripple-extra } }]',
        'extraVolumeMounts: [{ name: cfg, mountPath: /etc/extra }]',
        'tolerations: [{ key: dedicated, operator: Exists }]',
        'topologySpreadConstraints:',
        '  - maxSkew: 1',
        '    topologyKey: topology.kubernetes.io/zone',
        '    whenUnsatisfiable: ScheduleAnyway',
        '    labelSelector: { matchLabels: { app.kubernetes.io/instance: "{{ .Release.Name }}" } }',
        'redis: { tls: { caSecret: redis-ca } }',
      ].join('\n'),
    );
    const objects = parseObjects(ok(template(['-f', values]), 'template'));
    const deploymentOf = (name: string) => {
      const o = objects.find((x) => x.kind === 'Deployment' && x.metadata.name === name);
      return z.object({ spec: z.object({ replicas: z.number(), template: z.object({ spec: z.object({ priorityClassName: z.string().optional(), nodeSelector: z.record(z.string(), z.string()).optional(), tolerations: z.array(z.object({ key: z.string() }).passthrough()).default([]), topologySpreadConstraints: z.array(z.object({ labelSelector: z.unknown() }).passthrough()).default([]), volumes: z.array(z.object({ name: z.string() }).passthrough()).default([]), containers: z.array(z.object({ env: z.array(envVarSchema).default([]), resources: z.object({ requests: z.record(z.string(), z.string()).optional() }).passthrough(), volumeMounts: z.array(z.object({ name: z.string(), mountPath: z.string() }).passthrough()).default([]), startupProbe: z.object({ httpGet: z.object({ path: z.string() }).passthrough() }).passthrough().optional() }).passthrough()) }).passthrough() }) }) }).parse(o).spec;
    };
    const watcher = deploymentOf('ripple-watcher');
    const ops = deploymentOf('ripple-ops');
    const emit = deploymentOf('ripple-worker-emit-events');
    const other = deploymentOf('ripple-worker-reconcile-modelserving');
    expect(watcher.template.spec.containers[0]!.resources.requests?.cpu).toBe('333m');
    expect(ops.template.spec.containers[0]!.resources.requests?.cpu).toBe('100m');
    expect(ops.template.spec.nodeSelector).toEqual({ pool: 'ops' });
    expect(watcher.template.spec.nodeSelector).toEqual({ pool: 'platform' });
    expect(watcher.template.spec.tolerations.map((t) => t.key)).toEqual(['dedicated', 'watchers']);
    expect(ops.template.spec.tolerations.map((t) => t.key)).toEqual(['dedicated']);
    expect([emit.replicas, other.replicas]).toEqual([3, 1]);
    expect(emit.template.spec.containers[0]!.env.find((e) => e.name === 'EXTRA')?.value).toBe('yes');
    expect(other.template.spec.containers[0]!.env.some((e) => e.name === 'EXTRA')).toBe(false);
    expect(watcher.template.spec.topologySpreadConstraints[0]!.labelSelector).toEqual({ matchLabels: { 'app.kubernetes.io/instance': 'ripple' } });
    for (const d of [watcher, ops, emit, other]) {
      const c = d.template.spec.containers[0]!;
      expect(d.template.spec.priorityClassName).toBe('ripple-high');
      expect(d.template.spec.volumes.map((v) => v.name)).toEqual(['tmp', 'redis-ca', 'cfg']);
      expect(c.volumeMounts.map((m) => m.mountPath)).toEqual(['/tmp', '/etc/ripple/redis-ca', '/etc/extra']);
      expect(c.env.find((e) => e.name === 'NODE_EXTRA_CA_CERTS')?.value).toBe('/etc/ripple/redis-ca/ca.crt');
      expect(c.startupProbe?.httpGet.path).toBe('/healthz');
    }
  });

  describe('a real release on the sandbox', () => {
    const release = `hc-${Math.random().toString(36).slice(2, 8)}`;
    const full = `${release}-ripple`;
    // The ops token is the operator's: the chart generates none (it would change on every helm template).
    const opsToken = `ops-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    let manifest: K8sObject[] = [];
    let child: ChildProcess | undefined;
    let opsPort = 0;

    async function stopChild(): Promise<void> {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    afterAll(async () => {
      await stopChild();
      helm(['uninstall', release, '--namespace', sb.namespace, '--ignore-not-found']);
    });

    /** Kustomize names are `ripple…`; the release's are `<release>-ripple…`. */
    const normal = (name: string) => (name.startsWith(full) ? `ripple${name.slice(full.length)}` : name);
    const key = (o: K8sObject) => `${o.kind}/${normal(o.metadata.name)}`;

    it('helm install succeeds and creates every object of its manifest', () => {
      const out = ok(
        helm(['install', release, chart, '--namespace', sb.namespace, '--set', `config.prefix=${sb.prefix}`, '--set', `config.watchNamespace=${sb.namespace}`, '--set', `opsToken.value=${opsToken}`]),
        'helm install',
      );
      expect(out).toMatch(/STATUS: deployed/);
      manifest = parseObjects(ok(helm(['get', 'manifest', release, '--namespace', sb.namespace]), 'helm get manifest'));
      expect(manifest.length).toBeGreaterThan(20);
      for (const o of manifest) {
        const r = kubectl(['get', o.kind, o.metadata.name, ...(o.metadata.namespace ? ['-n', o.metadata.namespace] : []), '-o', 'name']);
        expect(r.status, `${key(o)}: ${r.stderr}`).toBe(0);
      }
    });

    it("the release's objects match what the kustomize all-in-one overlay creates", () => {
      expectLikeOverlay(manifest, 'all-in-one', {
        rename: normal,
        // Helm installs into an existing namespace, and the chart keeps the given ops token in a Secret the
        // overlay leaves to the operator.
        onlyTheirs: ['Namespace/ripple-system'],
        onlyMine: ['Secret/ripple-ops-token'],
        // This release sets the prefix (the watcher's Role names its Lease after it) and the watch namespace.
        configData: { RIPPLE_WATCH_NAMESPACE: sb.namespace, RIPPLE_PREFIX: sb.prefix },
        lease: `${sb.prefix}-watcher`,
      });
    });

    it("the release's process, run from the checkout under the release's ServiceAccount, becomes ready and accepts the given ops token", async () => {
      const deployment = deploymentSchema.parse(JSON.parse(ok(kubectl(['get', 'deployment', full, '-n', sb.namespace, '-o', 'json']), 'get deployment')));
      const pod = deployment.spec.template.spec;
      const c = pod.containers[0]!;
      expect(c.args).toEqual(['all']);
      // The environment the kubelet would give the container, resolved from the release's objects. One
      // substitution: the demo Redis is a pod the sandbox never runs, so REDIS_URL is the test's Redis.
      const config = z.object({ data: z.record(z.string(), z.string()) }).passthrough().parse(JSON.parse(ok(kubectl(['get', 'configmap', c.envFrom[0]!.configMapRef.name, '-n', sb.namespace, '-o', 'json']), 'get configmap')));
      const env: Record<string, string> = { ...config.data };
      let token = '';
      for (const e of c.env) {
        const ref = z.object({ secretKeyRef: z.object({ name: z.string(), key: z.string() }).passthrough().optional(), fieldRef: z.object({ fieldPath: z.literal('metadata.namespace') }).optional() }).parse(e.valueFrom ?? {});
        if (ref.fieldRef) env[e.name] = sb.namespace;
        else if (ref.secretKeyRef) {
          const secret = z.object({ data: z.record(z.string(), z.string()) }).passthrough().parse(JSON.parse(ok(kubectl(['get', 'secret', ref.secretKeyRef.name, '-n', sb.namespace, '-o', 'json']), 'get secret')));
          env[e.name] = Buffer.from(secret.data[ref.secretKeyRef.key]!, 'base64').toString('utf8');
        }
        if (e.name === 'RIPPLE_OPS_TOKEN') token = env[e.name]!;
      }
      expect(env.REDIS_URL).toBe(`redis://${full}-redis.${sb.namespace}.svc:6379`);
      env.REDIS_URL = sb.redisUrl;
      expect(token).toBe(opsToken);
      // Its identity: a token of the release's ServiceAccount (TokenRequest), in place of the pod's mount.
      expect(pod.serviceAccountName).toBe(full);
      const saToken = ok(kubectl(['create', 'token', full, '-n', sb.namespace, '--duration=1h']), 'create token').trim();
      const cluster = sb.kc.getCurrentCluster()!;
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'sandbox', server: cluster.server, skipTLSVerify: cluster.skipTLSVerify, caData: cluster.caData, caFile: cluster.caFile }],
        users: [{ name: 'sa', token: saToken }],
        contexts: [{ name: 'sa', cluster: 'sandbox', user: 'sa' }],
        currentContext: 'sa',
      });
      const saKubeconfig = path.join(work, 'sa.kubeconfig');
      writeFileSync(saKubeconfig, kc.exportConfig());
      opsPort = await freePort();
      child = spawn(process.execPath, [path.join(root, 'bin', 'ripple.js'), ...c.args, '--kubeconfig', saKubeconfig, '--ops-port', String(opsPort)], {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, RIPPLE_OPS_HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      const base = `http://127.0.0.1:${opsPort}`;
      try {
        await waitFor('the release process to become ready', 90_000, async () => {
          if (child?.exitCode !== null) throw new Error(`ripple ${c.args.join(' ')} exited with ${child?.exitCode}`);
          return fetch(`${base}/readyz`).then((r) => r.ok).catch(() => false);
        }, 500);
        // It elected itself leader with the Lease its Role names, under the release's prefix.
        const lease = await waitFor('the watcher Lease', 30_000, async () => {
          const r = kubectl(['get', 'lease', `${sb.prefix}-watcher`, '-n', sb.namespace, '-o', 'json']);
          return r.status === 0 ? z.object({ spec: z.object({ holderIdentity: z.string() }).passthrough() }).parse(JSON.parse(r.stdout)) : false;
        });
        expect(lease.spec.holderIdentity).not.toBe('');
        const info = z.object({ writable: z.boolean() }).passthrough().parse(await (await fetch(`${base}/`)).json());
        expect(info.writable).toBe(true);
        // The token opens the state-changing routes; a resync lists primaries with the release's RBAC.
        expect((await fetch(`${base}/api/resync/reconcile-modelserving`, { method: 'POST' })).status).toBe(401);
        const resync = await fetch(`${base}/api/resync/reconcile-modelserving`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
        expect(resync.status, await resync.clone().text()).toBe(200);
      } finally {
        // Stopped before the upgrade and uninstall, pass or fail: it holds the release's Lease.
        await stopChild();
      }
    });

    it('helm upgrade applies a changed value, restarts pods on a changed setting, and keeps the token', () => {
      const before = deploymentSchema.parse(JSON.parse(ok(kubectl(['get', 'deployment', full, '-n', sb.namespace, '-o', 'json']), 'get deployment')));
      const tokenBefore = ok(kubectl(['get', 'secret', `${full}-ops-token`, '-n', sb.namespace, '-o', 'jsonpath={.data.token}']), 'get token');
      ok(helm(['upgrade', release, chart, '--namespace', sb.namespace, '--reuse-values', '--set', 'allInOne.replicas=2', '--set', 'config.logLevel=debug']), 'helm upgrade');
      const after = deploymentSchema.parse(JSON.parse(ok(kubectl(['get', 'deployment', full, '-n', sb.namespace, '-o', 'json']), 'get deployment')));
      expect(before.spec.replicas).toBe(1);
      expect(after.spec.replicas).toBe(2);
      expect(ok(kubectl(['get', 'configmap', `${full}-config`, '-n', sb.namespace, '-o', 'jsonpath={.data.LOG_LEVEL}']), 'get configmap')).toBe('debug');
      expect(after.spec.template.metadata.annotations['checksum/config']).not.toBe(before.spec.template.metadata.annotations['checksum/config']);
      expect(ok(kubectl(['get', 'secret', `${full}-ops-token`, '-n', sb.namespace, '-o', 'jsonpath={.data.token}']), 'get token')).toBe(tokenBefore);
      const status = z.object({ version: z.number(), info: z.object({ status: z.string() }).passthrough() }).passthrough().parse(JSON.parse(ok(helm(['status', release, '--namespace', sb.namespace, '-o', 'json']), 'helm status')));
      expect(status).toMatchObject({ version: 2, info: { status: 'deployed' } });
    });

    it('helm uninstall leaves nothing of the release, cluster-scoped objects included; the CRDs stay', async () => {
      ok(helm(['uninstall', release, '--namespace', sb.namespace, '--wait', '--timeout', '2m']), 'helm uninstall');
      for (const o of manifest) {
        const r = kubectl(['get', o.kind, o.metadata.name, ...(o.metadata.namespace ? ['-n', o.metadata.namespace] : []), '-o', 'name', '--ignore-not-found']);
        expect(r.stdout.trim(), key(o)).toBe('');
      }
      // Nothing else carries the release's label either.
      const cluster = ok(kubectl(['get', 'clusterroles,clusterrolebindings', '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name']), 'get cluster-scoped');
      expect(cluster.trim()).toBe('');
      // Pods and ReplicaSets go with their Deployments through the garbage collector, not at once.
      await waitFor(`nothing labelled ${release} in ${sb.namespace}`, 60_000, async () => leftOf(sb.namespace, release) === '', 500);
      // Helm's own release records are gone.
      expect(ok(kubectl(['get', 'secrets', '-n', sb.namespace, '-l', `owner=helm,name=${release}`, '-o', 'name']), 'release secrets').trim()).toBe('');
      // Policy: CRDs are never deleted with a release (that would delete every ModelServing in the cluster).
      for (const f of ['modelservings.workload.serving.volcano.sh', 'variantautoscalings.llmd.ai']) expect(kubectl(['get', 'crd', f]).status, f).toBe(0);
    });
  });

  it('every function Ripple ships has an identity in the chart', () => {
    const objects = parseObjects(ok(template(['--set', 'mode=scaled']), 'template'));
    for (const f of allFunctions()) {
      expect(objects.some((o) => o.kind === 'ClusterRole' && o.metadata.name === `ripple-worker-${f.name}`), f.name).toBe(true);
      expect(objects.some((o) => o.kind === 'Deployment' && o.metadata.name === `ripple-worker-${f.name}`), f.name).toBe(true);
    }
  });
});

// ops-lifecycle's admission webhooks (templates/webhooks.yaml): off by default, so the modes above do not render them.
describe('charts/ripple: the admission webhooks', () => {
  let caPem: string;
  const withSecret = () => ['--set', 'webhooks.enabled=true', '--set', 'webhooks.certificate.existingSecret=webhook-tls', '--set-string', `webhooks.certificate.caBundle=${caPem}`];
  const withCertManager = ['--set', 'webhooks.enabled=true', '--set', 'webhooks.certificate.certManager.enabled=true'];
  const registrationOf = (objects: K8sObject[]) =>
    z
      .object({ webhooks: z.array(z.object({ name: z.string(), failurePolicy: z.string(), namespaceSelector: z.unknown(), clientConfig: z.object({ caBundle: z.string().optional(), service: z.record(z.string(), z.unknown()) }).strict() }).passthrough()) })
      .passthrough()
      .parse(objects.find((o) => o.kind === 'MutatingWebhookConfiguration'));
  beforeAll(async () => {
    caPem = (await generateCa(1, 'helm-chart-test-ca')).certPem;
  });
  const webhookPodOf = (objects: K8sObject[]) =>
    z
      .object({ spec: z.object({ template: z.object({ metadata: z.object({ labels: z.record(z.string(), z.string()) }).passthrough(), spec: z.object({ automountServiceAccountToken: z.boolean().optional(), containers: z.array(containerSchema) }).passthrough() }) }) })
      .parse(objects.find((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'webhook')).spec.template;
  const webhookContainerOf = (objects: K8sObject[]) => {
    const c = webhookPodOf(objects).spec.containers[0]!;
    return { ...c, ports: z.array(z.object({ name: z.string(), containerPort: z.number() })).parse(c.ports) };
  };

  it("renders infra/deploy/webhook's objects (with the release `ripple` in ripple-system): the same webhooks, pod, Service, budget and cert-manager chain", () => {
    const mine = parseObjects(ok(helm(['template', 'ripple', chart, '--namespace', 'ripple-system', ...withCertManager]), 'helm template')).filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'webhook');
    expectLikeOverlay(mine, '../webhook', { rename: (n) => n, onlyTheirs: [], onlyMine: [] });
    const theirs = parseObjects(ok(run(kubectlBin, ['kustomize', path.join(root, 'infra', 'deploy', 'webhook')]), 'kustomize infra/deploy/webhook'));
    const byKey = (list: K8sObject[]) => new Map(list.map((o) => [`${o.kind}/${o.metadata.name}`, o]));
    const [m, t] = [byKey(mine), byKey(theirs)];
    // The registration as a whole (failurePolicy, selectors, rules, paths, timeouts), and cert-manager's objects.
    const webhooksOf = (o: K8sObject | undefined) => z.object({ webhooks: z.array(z.unknown()) }).passthrough().parse(o).webhooks;
    expect(webhooksOf(m.get('MutatingWebhookConfiguration/ripple-ops-lifecycle'))).toEqual(webhooksOf(t.get('MutatingWebhookConfiguration/ripple-ops-lifecycle')));
    expect(m.get('MutatingWebhookConfiguration/ripple-ops-lifecycle')?.metadata.annotations).toEqual(t.get('MutatingWebhookConfiguration/ripple-ops-lifecycle')?.metadata.annotations);
    for (const k of ['Certificate/ripple-ops-lifecycle-webhook', 'Certificate/ripple-webhook-ca', 'Issuer/ripple-webhook-ca', 'Issuer/ripple-webhook-selfsigned']) expect(spec(m.get(k)!), k).toEqual(spec(t.get(k)!));
    expect(m.get('ServiceAccount/ripple-ops-lifecycle-webhook')).toMatchObject({ automountServiceAccountToken: false });
    // No roles: the pure webhook's identity is bound to nothing.
    expect(mine.filter((o) => /Role/.test(o.kind))).toEqual([]);
  });

  it("with webhooks.graceDelete.enabled renders infra/deploy/webhook with its grace-delete component: the same registration, pod and RBAC", () => {
    const args = [...withCertManager, '--set', 'webhooks.graceDelete.enabled=true', '--set', `functionToken.value=${TOKEN}`];
    const mine = parseObjects(ok(helm(['template', 'ripple', chart, '--namespace', 'ripple-system', ...args]), 'helm template')).filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'webhook');
    // An overlay the way docs/ops-lifecycle.md tells kustomize users to write it.
    const dir = mkdtempSync(path.join(work, 'webhook-grace-'));
    const webhookDir = path.join(root, 'infra', 'deploy', 'webhook');
    writeFileSync(path.join(dir, 'kustomization.yaml'), `resources: [${path.relative(dir, webhookDir)}]\ncomponents: [${path.relative(dir, path.join(webhookDir, 'grace-delete'))}]\n`);
    expectLikeOverlay(mine, path.relative(path.join(root, 'infra', 'deploy', 'overlays'), dir), { rename: (n) => n, onlyTheirs: [], onlyMine: [] });
    const theirs = parseObjects(ok(run(kubectlBin, ['kustomize', dir]), 'kustomize webhook + grace-delete'));
    const webhooksOf = (list: K8sObject[]) => z.object({ webhooks: z.array(z.unknown()) }).passthrough().parse(list.find((o) => o.kind === 'MutatingWebhookConfiguration')).webhooks;
    expect(webhooksOf(mine)).toEqual(webhooksOf(theirs));
    expect(webhooksOf(mine)).toHaveLength(3);
    for (const list of [mine, theirs]) expect(list.find((o) => o.kind === 'ServiceAccount')).toMatchObject({ automountServiceAccountToken: true });
  });

  it.each(Object.keys(MODES))('with either certificate source (%s): helm lint and a strict server-side dry run; a restricted pod; the caBundle is the given CA', (mode) => {
    for (const [source, args] of [['existingSecret', withSecret()], ['certManager', withCertManager]] as const) {
      const lint = run(helmBin, ['lint', '--strict', chart, ...MODES[mode]!, ...args]);
      expect(lint.status, `${source}: ${lint.stdout}${lint.stderr}`).toBe(0);
      expect(lint.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
      const text = ok(template([...MODES[mode]!, ...args]), `helm template ${source}`);
      const objects = parseObjects(text);
      const r = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '--force-conflicts', '--field-manager=ripple-helm-test', '-f', '-'], text);
      expect(r.stderr, `${mode} ${source}:\n${r.stderr}`).toBe('');
      expect(r.stdout.trim().split('\n')).toHaveLength(objects.length);
      const hooks = registrationOf(objects).webhooks;
      expect(hooks.map((w) => [w.name, w.failurePolicy])).toEqual([['pod-readiness-gate.ops-lifecycle.ripple.dev', 'Fail'], ['pod-lifecycle.ops-lifecycle.ripple.dev', 'Ignore']]);
      for (const w of hooks) {
        expect(w.clientConfig.service, w.name).toMatchObject({ name: 'ripple-ops-lifecycle-webhook', namespace: sb.namespace, port: 443 });
        // TLS verified, never skipped: the given CA, or cert-manager's injector fills it (the annotation).
        if (source === 'existingSecret') expect(Buffer.from(w.clientConfig.caBundle ?? '', 'base64').toString('utf8')).toBe(caPem);
        else expect(w.clientConfig.caBundle).toBeUndefined();
      }
      const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'ripple-ops-lifecycle-webhook');
      const pod = z.object({ spec: z.object({ template: z.object({ spec: z.object({ securityContext: z.record(z.string(), z.unknown()), volumes: z.array(z.object({ name: z.string(), secret: z.object({ secretName: z.string() }).optional() }).passthrough()), containers: z.array(z.object({ securityContext: z.record(z.string(), z.unknown()) }).passthrough()) }).passthrough() }) }) }).parse(deployment).spec.template.spec;
      expect(pod.volumes.find((v) => v.name === 'tls')?.secret?.secretName).toBe(source === 'existingSecret' ? 'webhook-tls' : 'ripple-ops-lifecycle-webhook-tls');
      const eff = { ...pod.securityContext, ...pod.containers[0]!.securityContext };
      expect(eff).toMatchObject({ runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } });
      expect(eff.runAsUser).toBeUndefined();
    }
  });

  it('scopes the webhooks to config.watchNamespace when Ripple reconciles only that namespace; webhooks.namespaceSelector wins; a cert-manager issuer of your own', () => {
    const selectorOf = (args: string[]) => registrationOf(parseObjects(ok(template([...withCertManager, ...args]), 'template'))).webhooks.map((w) => w.namespaceSelector);
    const notSystem = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-node-lease'] }] };
    expect(selectorOf([])).toEqual([notSystem, notSystem]);
    const only = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a'] }] };
    expect(selectorOf(['--set', 'config.watchNamespace=team-a'])).toEqual([only, only]);
    expect(selectorOf(['--set', 'config.watchNamespace=team-a', '--set', 'webhooks.namespaceSelector.matchLabels.ops=on'])).toEqual([{ matchLabels: { ops: 'on' } }, { matchLabels: { ops: 'on' } }]);
    const objects = parseObjects(ok(template([...withCertManager, '--set', 'webhooks.certificate.certManager.issuerRef.name=corp-ca', '--set', 'webhooks.certificate.certManager.issuerRef.kind=ClusterIssuer']), 'template'));
    expect(objects.filter((o) => o.kind === 'Issuer' || o.metadata.name === 'ripple-webhook-ca')).toEqual([]);
    expect(spec(objects.find((o) => o.kind === 'Certificate')!).issuerRef).toEqual({ name: 'corp-ca', kind: 'ClusterIssuer' });
    expect(registrationOf(objects).webhooks[0]?.failurePolicy).toBe('Fail');
    expect(registrationOf(parseObjects(ok(template([...withCertManager, '--set', 'webhooks.failurePolicy=Ignore']), 'template'))).webhooks.map((w) => w.failurePolicy)).toEqual(['Ignore', 'Ignore']);
  });

  it('refuses webhooks without a verifiable certificate, with a message saying what to set', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--set', 'webhooks.enabled=true'], /webhooks.enabled needs a serving certificate for ripple-ops-lifecycle-webhook\.\S+\.svc: set webhooks.certificate.certManager.enabled=true .* or webhooks.certificate.existingSecret .* with webhooks.certificate.caBundle/],
      [['--set', 'webhooks.enabled=true', '--set', 'webhooks.certificate.existingSecret=webhook-tls'], /webhooks.certificate.existingSecret needs webhooks.certificate.caBundle/],
      [['--set', 'webhooks.enabled=true', '--set', 'webhooks.certificate.existingSecret=webhook-tls', '--set', 'webhooks.certificate.caBundle=LS0tLS1CRUdJTg=='], /at '\/webhooks\/certificate\/caBundle'/],
      [[...withCertManager, '--set', 'webhooks.certificate.existingSecret=webhook-tls'], /webhooks.certificate: give certManager.enabled=true or existingSecret, not both/],
      [['--set', 'webhooks.failurePolicy=Never'], /at '\/webhooks\/failurePolicy': value must be one of 'Fail', 'Ignore'/],
      [['--set', 'webhooks.insecureSkipTLSVerify=true'], /at '\/webhooks': additional properties 'insecureSkipTLSVerify' not allowed/],
    ];
    for (const [args, message] of cases) {
      const r = template(args);
      expect(r.status, args.join(' ')).not.toBe(0);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  });

  // The webhook pods' ops port (cli/webhook.ts --ops-port): the PodMonitor scrapes them like every other Ripple pod.
  it('the webhook pod serves the ops port (metrics, health) the PodMonitor scrapes, labelled component=webhook', () => {
    const objects = parseObjects(ok(template([...withSecret(), '--set', 'monitoring.podMonitor.enabled=true', '--set', 'config.opsPort=9191']), 'template'));
    const c = webhookContainerOf(objects);
    expect(c.ports).toContainEqual({ name: 'ops', containerPort: 9191 });
    expect(c.args.slice(c.args.indexOf('--ops-port'), c.args.indexOf('--ops-port') + 2)).toEqual(['--ops-port', '9191']);
    const pod = webhookPodOf(objects);
    expect(pod.metadata.labels['app.kubernetes.io/component']).toBe('webhook');
    const monitor = z
      .object({ spec: z.object({ selector: z.object({ matchLabels: z.record(z.string(), z.string()) }), podMetricsEndpoints: z.array(z.object({ port: z.string().optional(), path: z.string(), relabelings: z.array(z.object({ sourceLabels: z.array(z.string()), targetLabel: z.string() }).passthrough()) }).passthrough()) }) })
      .parse(objects.find((o) => o.kind === 'PodMonitor')).spec;
    expect(Object.entries(monitor.selector.matchLabels).every(([k, v]) => pod.metadata.labels[k] === v), 'the PodMonitor selects the webhook pod').toBe(true);
    const endpoint = monitor.podMetricsEndpoints.find((e) => e.port === 'ops');
    expect(endpoint).toMatchObject({ path: '/metrics' });
    expect(endpoint?.relabelings).toContainEqual(expect.objectContaining({ sourceLabels: ['__meta_kubernetes_pod_label_app_kubernetes_io_component'], targetLabel: 'component' }));
  });

  it('networkPolicy selects the webhook pods: HTTPS open to the API server (anywhere, or networkPolicy.webhookFrom), the ops port to networkPolicy.opsFrom', () => {
    const prometheus = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } };
    const apiServer = { ipBlock: { cidr: '10.0.0.0/24' } };
    const policiesFor = (args: string[]) => {
      const objects = parseObjects(ok(template([...withSecret(), '--set', 'networkPolicy.enabled=true', '--set-json', `networkPolicy.opsFrom=${JSON.stringify([prometheus])}`, ...args]), 'template'));
      const labels = webhookPodOf(objects).metadata.labels;
      const policies = objects.filter((o) => o.kind === 'NetworkPolicy').map((o) => networkPolicySchema.parse(o).spec);
      return policies.filter((p) => selects(p.podSelector, labels));
    };
    for (const [args, from] of [[[], undefined], [['--set-json', `networkPolicy.webhookFrom=${JSON.stringify([apiServer])}`], [apiServer]]] as const) {
      const selecting = policiesFor([...args]);
      expect(selecting.length, 'a policy selects the webhook pod').toBeGreaterThan(0);
      const rules = selecting.flatMap((p) => p.ingress);
      const https = rules.filter((r) => r.ports?.some((p) => p.port === 'https'));
      expect(https.map((r) => r.from), 'HTTPS for the API server').toEqual([from]);
      const ops = rules.filter((r) => r.ports?.some((p) => p.port === 'ops'));
      expect(ops.map((r) => r.from)).toEqual([[prometheus]]);
    }
  });

  // GraceDelete (docs/ops-lifecycle.md, "Delete through the lifecycle"): the third webhook, the flag, the token, and
  // the RBAC of infra/deploy/rbac's grace-delete components for the webhook and for the lifecycle function.
  it.each(['all-in-one', 'scaled with KEDA and monitoring', 'serverless on OpenFaaS'])('webhooks.graceDelete.enabled (%s) turns on everything delete through the lifecycle needs, and passes a strict server-side dry run', async (mode) => {
    const grace = [...withSecret(), '--set', 'webhooks.graceDelete.enabled=true', '--set', `functionToken.value=${TOKEN}`];
    const text = ok(template([...MODES[mode]!, ...grace]), 'template');
    const objects = parseObjects(text);
    const r = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '--force-conflicts', '--field-manager=ripple-helm-test', '-f', '-'], text);
    expect(r.stderr, `${mode}:\n${r.stderr}`).toBe('');
    // The registration: the code's pod-grace-delete webhook (its rules, failurePolicy, sideEffects, timeout), through the Service.
    const hooks = registrationOf(objects).webhooks;
    expect(hooks.map((w) => w.name)).toEqual(['pod-readiness-gate.ops-lifecycle.ripple.dev', 'pod-lifecycle.ops-lifecycle.ripple.dev', 'pod-grace-delete.ops-lifecycle.ripple.dev']);
    const fromCode = z.object({ webhooks: z.array(z.record(z.string(), z.unknown())) }).passthrough().parse(mutatingWebhookConfiguration({ name: 'x', baseUrl: 'https://unused', caBundlePem: '', webhooks: [graceDeleteWebhook({ kc: sb.kc })] })).webhooks[0]!;
    const { clientConfig, namespaceSelector: _n, ...rest } = hooks[2]!;
    const { clientConfig: _c, namespaceSelector: _m, ...expected } = fromCode;
    expect(rest).toEqual(expected);
    expect(clientConfig.service).toMatchObject({ name: 'ripple-ops-lifecycle-webhook', path: '/ops-lifecycle/pod-grace-delete', port: 443 });
    expect(hooks[2]!.namespaceSelector).toEqual(hooks[0]!.namespaceSelector);
    // The process: --grace-delete, the function token the API server must send, and credentials to begin operations.
    const c = webhookContainerOf(objects);
    expect(c.args).toContain('--grace-delete');
    expect(c.env.find((e) => e.name === 'RIPPLE_FUNCTION_TOKEN')?.valueFrom).toEqual({ secretKeyRef: { name: 'ripple-function-token', key: 'token' } });
    const pod = webhookPodOf(objects);
    expect(pod.spec.automountServiceAccountToken).toBe(true);
    expect(objects.find((o) => o.kind === 'ServiceAccount' && o.metadata.name === 'ripple-ops-lifecycle-webhook')).not.toMatchObject({ automountServiceAccountToken: false });
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'ripple-function-token' && o.metadata.namespace === sb.namespace);
    expect(Buffer.from(z.object({ data: z.object({ token: z.string() }) }).passthrough().parse(secret).data.token, 'base64').toString('utf8')).toBe(TOKEN);
    // RBAC from infra/deploy/rbac: the webhook gets pods get and patch, the lifecycle function pods delete.
    const rulesIn = (file: string) => parseObjects(readFileSync(path.join(root, 'infra', 'deploy', 'rbac', file), 'utf8')).filter((o) => o.kind === 'ClusterRole').flatMap((o) => z.object({ rules: z.array(z.unknown()) }).passthrough().parse(o).rules);
    const grantsTo = (account: string, namespace: string) => {
      const roles = objects
        .filter((o) => o.kind === 'ClusterRoleBinding')
        .map((o) => z.object({ roleRef: z.object({ name: z.string() }), subjects: z.array(z.object({ name: z.string(), namespace: z.string() }).passthrough()) }).passthrough().parse(o))
        .filter((b) => b.subjects.some((s) => s.name === account && s.namespace === namespace))
        .map((b) => b.roleRef.name);
      return objects.filter((o) => o.kind === 'ClusterRole' && roles.includes(o.metadata.name)).flatMap((o) => z.object({ rules: z.array(z.unknown()) }).passthrough().parse(o).rules);
    };
    const webhookRules = rulesIn('ops-lifecycle-webhook/grace-delete/rbac.yaml');
    expect(webhookRules).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] }]);
    expect(grantsTo('ripple-ops-lifecycle-webhook', sb.namespace)).toEqual(webhookRules);
    const lifecycleAccount = mode === 'all-in-one' ? ['ripple', sb.namespace] : ['ripple-worker-ops-lifecycle', mode.includes('OpenFaaS') ? fnNamespace : sb.namespace];
    expect(grantsTo(lifecycleAccount[0]!, lifecycleAccount[1]!)).toEqual(expect.arrayContaining(rulesIn('ops-lifecycle/grace-delete/rbac.yaml')));
    // `ripple` accepts the rendered command line (its webhook parser is strict).
    const help = await runAsync(process.execPath, [path.join(root, 'bin', 'ripple.js'), ...c.args, '--help']);
    expect(help.status, help.stderr).toBe(0);
  });

  it('GraceDelete stays off by default (two webhooks, no credentials, no delete right), and on it needs the token the API server sends or an explicit opt-out', () => {
    const objects = parseObjects(ok(template(withSecret()), 'template'));
    expect(registrationOf(objects).webhooks.map((w) => w.name)).not.toContain('pod-grace-delete.ops-lifecycle.ripple.dev');
    expect(webhookContainerOf(objects).args).not.toContain('--grace-delete');
    expect(objects.filter((o) => o.kind === 'ClusterRole' && /grace-delete/.test(o.metadata.name))).toEqual([]);
    const r = template([...withSecret(), '--set', 'webhooks.graceDelete.enabled=true']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/webhooks.graceDelete.enabled needs the token the API server sends .*functionToken.existingSecret or functionToken.value.*webhooks.graceDelete.allowUnauthenticated=true/);
    const open = parseObjects(ok(template([...withSecret(), '--set', 'webhooks.graceDelete.enabled=true', '--set', 'webhooks.graceDelete.allowUnauthenticated=true']), 'template'));
    const c = webhookContainerOf(open);
    expect(c.env.find((e) => e.name === 'RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED')?.value).toBe('true');
    expect(c.env.find((e) => e.name === 'RIPPLE_FUNCTION_TOKEN')).toBeUndefined();
    expect(open.filter((o) => o.kind === 'Secret' && o.metadata.name === 'ripple-function-token')).toEqual([]);
  });
});

interface OverlayDifferences {
  /** Maps the chart's names (and any string naming them, such as a URL) to the overlay's. */
  rename: (name: string) => string;
  onlyTheirs: string[];
  onlyMine: string[];
  /** ConfigMap keys the chart sets beyond the overlay's. */
  configData?: Record<string, string>;
  /** The Lease name the watcher's Role names, when not the overlay's `ripple-watcher`. */
  lease?: string;
  /** Environment variables (name → value) a container of the chart has beyond the overlay's. */
  extraEnv?: Record<string, Record<string, string>>;
  /** Deployments whose replicas differ by default (the chart's, by key). */
  replicas?: Record<string, number>;
}

/**
 * The chart's objects against `kubectl kustomize infra/deploy/overlays/<overlay>`: the same kinds and names
 * (after `rename`), the same RBAC rules and bindings, ConfigMap, Service ports, PodDisruptionBudget,
 * ScaledObject specs, and pod specs (args, env, ports, probes, resources, security, volumes; not images,
 * whose tag is a value, nor labels, which the chart sets the Helm way).
 */
function expectLikeOverlay(mineObjects: K8sObject[], overlay: string, d: OverlayDifferences): void {
  const theirsObjects = parseObjects(ok(run(kubectlBin, ['kustomize', path.join(root, 'infra', 'deploy', 'overlays', overlay)]), `kustomize ${overlay}`));
  const key = (o: K8sObject, mine: boolean) => `${o.kind}/${mine ? d.rename(o.metadata.name) : o.metadata.name}`;
  const mine = new Map(mineObjects.map((o) => [key(o, true), o]));
  const theirs = new Map(theirsObjects.map((o) => [key(o, false), o]));
  expect([...theirs.keys()].filter((k) => !mine.has(k)).sort(), `${overlay}: only in the overlay`).toEqual([...d.onlyTheirs].sort());
  expect([...mine.keys()].filter((k) => !theirs.has(k)).sort(), `${overlay}: only in the chart`).toEqual([...d.onlyMine].sort());
  // Namespaces differ by design (the release's; kustomize's `namespace:`); names go through `rename`.
  const normalise = (v: unknown, mineSide: boolean): unknown =>
    typeof v === 'string'
      ? mineSide
        ? d.rename(v)
        : v
      : Array.isArray(v)
        ? v.map((x) => normalise(x, mineSide))
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'namespace').map(([k, x]) => [k, normalise(x, mineSide)]))
          : v;
  const field = (o: K8sObject | undefined, path: string[], mineSide: boolean) => normalise(path.reduce<unknown>((v, p) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[p] : undefined), o), mineSide);
  const strip = (spec: unknown, k: string, mineSide: boolean): unknown => {
    const pod = z.object({ containers: z.array(z.object({ env: z.array(envVarSchema).optional() }).passthrough()) }).passthrough().parse(spec);
    const extra = mineSide ? (d.extraEnv?.[k] ?? {}) : {};
    for (const [name, value] of Object.entries(extra)) expect(pod.containers[0]!.env?.find((e) => e.name === name)?.value, `${k} ${name}`).toBe(value);
    // By design the chart adds a startupProbe and pins no uid (OpenShift's restricted-v2 assigns one); the
    // overlays still set runAsUser/runAsGroup 1000 and no startupProbe. Everything else must be equal.
    const containers = pod.containers.map(({ image: _i, imagePullPolicy: _p, startupProbe: _s, ...c }) => ({ ...c, ...(c.env ? { env: c.env.filter((e) => !(e.name in extra)) } : {}) }));
    const security = z.object({ securityContext: z.record(z.string(), z.unknown()).optional() }).passthrough().parse(pod).securityContext;
    const { runAsUser: _u, runAsGroup: _g, ...podSecurity } = security ?? {};
    return normalise({ ...pod, containers, ...(security ? { securityContext: podSecurity } : {}) }, mineSide);
  };
  for (const [k, o] of theirs) {
    const m = mine.get(k);
    if (!m) continue;
    // RBAC: the same rules, and bindings of the same accounts to the same roles.
    const lease = (v: unknown) => (k === 'Role/ripple-watcher' && d.lease ? (JSON.parse(JSON.stringify(v).replaceAll('"ripple-watcher"', `"${d.lease}"`)) as unknown) : v);
    expect(field(m, ['rules'], true), `${k} rules`).toEqual(lease(field(o, ['rules'], false)));
    for (const f of ['roleRef', 'subjects']) expect(field(m, [f], true), `${k} ${f}`).toEqual(field(o, [f], false));
    if (o.kind === 'ConfigMap') expect(field(m, ['data'], true), k).toEqual({ ...(field(o, ['data'], false) as object), ...d.configData });
    if (o.kind === 'Secret') expect(Object.keys(z.object({ stringData: z.record(z.string(), z.string()) }).passthrough().parse(m).stringData), k).toEqual(['url']);
    if (o.kind === 'Service' && o.apiVersion === 'v1') expect(field(m, ['spec', 'ports'], true), k).toEqual(field(o, ['spec', 'ports'], false));
    if (o.kind === 'PodDisruptionBudget') expect(field(m, ['spec', 'maxUnavailable'], true), k).toEqual(field(o, ['spec', 'maxUnavailable'], false));
    if (o.kind === 'ScaledObject') expect(field(m, ['spec'], true), k).toEqual(field(o, ['spec'], false));
    if (o.kind === 'Deployment') {
      expect(field(m, ['spec', 'replicas'], true), k).toEqual(d.replicas?.[k] ?? field(o, ['spec', 'replicas'], false));
      expect(strip(field(m, ['spec', 'template', 'spec'], true), k, true), k).toEqual(strip(field(o, ['spec', 'template', 'spec'], false), k, false));
    }
    if (o.apiVersion === 'serving.knative.dev/v1') {
      expect(strip(field(m, ['spec', 'template', 'spec'], true), k, true), k).toEqual(strip(field(o, ['spec', 'template', 'spec'], false), k, false));
      expect(field(m, ['spec', 'template', 'metadata', 'annotations'], true), k).toMatchObject(field(o, ['spec', 'template', 'metadata', 'annotations'], false) as object);
      expect(field(m, ['metadata', 'labels'], true), k).toMatchObject({ 'networking.knative.dev/visibility': 'cluster-local' });
    }
    // Every Service selects the pods of the workload it fronts.
    if (o.kind === 'Service' && o.apiVersion === 'v1') {
      const selector = z.object({ spec: z.object({ selector: z.record(z.string(), z.string()) }).passthrough() }).parse(m).spec.selector;
      const podLabels = (x: K8sObject) => z.object({ spec: z.object({ template: z.object({ metadata: z.object({ labels: z.record(z.string(), z.string()) }) }) }) }).parse(x).spec.template.metadata.labels;
      const target = mineObjects.find((x) => x.kind === 'Deployment' && Object.entries(selector).every(([l, v]) => podLabels(x)[l] === v));
      expect(target, `${k} selects a Deployment`).toBeDefined();
    }
  }
}

/** Whatever in the namespace still carries the release's label. */
function leftOf(namespace: string, release: string): string {
  return ok(kubectl(['get', 'all,configmaps,secrets,serviceaccounts,roles,rolebindings,poddisruptionbudgets', '-n', namespace, '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name']), 'get namespaced').trim();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

const labelSelectorSchema = z.object({
  matchLabels: z.record(z.string(), z.string()).default({}),
  matchExpressions: z.array(z.object({ key: z.string(), operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']), values: z.array(z.string()).default([]) })).default([]),
});
const networkPolicySchema = z.object({
  spec: z.object({
    podSelector: labelSelectorSchema,
    ingress: z.array(z.object({ ports: z.array(z.object({ port: z.union([z.string(), z.number()]) }).passthrough()).optional(), from: z.array(z.unknown()).optional() })).default([]),
  }),
});

/** Whether a label selector (matchLabels and matchExpressions, as the API server reads them) selects these labels. */
function selects(selector: z.infer<typeof labelSelectorSchema>, labels: Record<string, string>): boolean {
  return (
    Object.entries(selector.matchLabels).every(([k, v]) => labels[k] === v) &&
    selector.matchExpressions.every((e) =>
      e.operator === 'In' ? e.values.includes(labels[e.key] ?? '\0') : e.operator === 'NotIn' ? !e.values.includes(labels[e.key] ?? '\0') : e.operator === 'Exists' ? e.key in labels : !(e.key in labels),
    )
  );
}
