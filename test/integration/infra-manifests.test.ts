import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { webhookEnv } from '../../cli/webhook.js';
import { allFunctions } from '../../functions/index.js';
import { TRAFFIC_OFF_MODES } from '../../functions/ops-lifecycle/protocol/index.js';
import { JOB_COUNT_METRIC } from '../../ops/queue-counts.js';
import { processConfigSchema, loadProcessConfig } from '../../runtime/config.js';
import { parseDispatchTargets } from '../../runtime/dispatcher.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// Every manifest under infra/deploy, against the real API server: kustomize builds each way of
// running Ripple, and the server validates every object with a dry run (strict field validation).
// Knative Serving and KEDA are not installed in the sandbox, so this test installs minimal CRDs for
// their two kinds, modelled on the upstream schemas for the fields Ripple uses (typed, so a number
// where KEDA wants a string is refused); the OpenFaaS stack is not a Kubernetes object and is checked
// here against a schema of faas-cli's stack format.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const deploy = path.join(root, 'infra', 'deploy');
const kubectlBin = existsSync(path.join(root, '.cache/control-plane/bin/kubectl')) ? path.join(root, '.cache/control-plane/bin/kubectl') : 'kubectl';
// The last two: ops-lifecycle's admission webhooks served as a Knative Service / through the OpenFaaS gateway
// (each applied on its own; ops-lifecycle-webhook-manifests.test.ts checks them against the code's webhooks).
const BUILDS = ['overlays/all-in-one', 'overlays/scaled', 'overlays/serverless', 'overlays/serverless-kubernetes', 'openfaas/control-plane', 'openfaas/functions-rbac', 'components/knative/webhook', 'openfaas/webhook'] as const;
/** Fewer objects than this from a build means it lost some; the webhook builds are small. */
const MIN_OBJECTS: Partial<Record<(typeof BUILDS)[number], number>> = { 'components/knative/webhook': 3, 'openfaas/webhook': 1 };
const FUNCTIONS = ['reconcile-modelserving', 'reconcile-autoscaler', 'ops-lifecycle', 'emit-events'];

let sb: TestSandbox;
let kubeconfig: string;
const installedCrds: string[] = [];

function kubectl(args: string[], input?: string): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(kubectlBin, ['--kubeconfig', kubeconfig, ...args], { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

const objectSchema = z
  .object({ apiVersion: z.string(), kind: z.string(), metadata: z.object({ name: z.string(), namespace: z.string().optional() }).passthrough() })
  .passthrough();
type K8sObject = z.infer<typeof objectSchema>;

function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((d) => d !== null)
    .map((d) => objectSchema.parse(d));
}

/** kustomize build, optionally re-homed into another namespace (a wrapper kustomization). */
function build(dir: string, namespace?: string): { text: string; objects: K8sObject[] } {
  let target = path.join(deploy, dir);
  let tmp: string | undefined;
  if (namespace) {
    tmp = mkdtempSync(path.join(tmpdir(), 'ripple-kustomize-'));
    writeFileSync(path.join(tmp, 'kustomization.yaml'), `namespace: ${namespace}\nresources:\n  - ${path.relative(tmp, target)}\n`);
    target = tmp;
  }
  try {
    const r = spawnSync(kubectlBin, ['kustomize', target], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`kustomize ${dir}: ${r.stderr}`);
    return { text: r.stdout, objects: parseObjects(r.stdout) };
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}

const of = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const spec = (o: K8sObject) => z.object({ spec: z.record(z.string(), z.unknown()) }).passthrough().parse(o).spec;

const containerSchema = z
  .object({
    name: z.string().optional(),
    image: z.string(),
    args: z.array(z.string()).default([]),
    ports: z.array(z.object({ name: z.string().optional(), containerPort: z.number() })).default([]),
    env: z.array(z.object({ name: z.string() }).passthrough()).default([]),
    readinessProbe: z.object({ httpGet: z.object({ path: z.string(), port: z.union([z.string(), z.number()]).optional() }).optional() }).passthrough().optional(),
    livenessProbe: z.object({ httpGet: z.object({ path: z.string(), port: z.union([z.string(), z.number()]).optional() }).optional() }).passthrough().optional(),
  })
  .passthrough();
const podTemplateSchema = z.object({
  template: z.object({
    metadata: z.object({ annotations: z.record(z.string(), z.string()).optional() }).passthrough().optional(),
    spec: z.object({ serviceAccountName: z.string(), containers: z.array(containerSchema), terminationGracePeriodSeconds: z.number().optional() }).passthrough(),
  }),
  replicas: z.number().optional(),
});
const podTemplate = (o: K8sObject) => podTemplateSchema.parse(spec(o));

/** Minimal CRDs for the two platform kinds, typed like upstream for every field Ripple sets. */
const str = { type: 'string' };
const int = { type: 'integer' };
const preserve = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
const stringMap = { type: 'object', additionalProperties: { type: 'string' } };
const PLATFORM_CRDS = [
  {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'scaledobjects.keda.sh' },
    spec: {
      group: 'keda.sh',
      names: { kind: 'ScaledObject', plural: 'scaledobjects', listKind: 'ScaledObjectList', singular: 'scaledobject' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                spec: {
                  type: 'object',
                  required: ['scaleTargetRef', 'triggers'],
                  properties: {
                    scaleTargetRef: { type: 'object', required: ['name'], properties: { name: str, kind: str, apiVersion: str, envSourceContainerName: str } },
                    minReplicaCount: int,
                    maxReplicaCount: int,
                    idleReplicaCount: int,
                    pollingInterval: int,
                    cooldownPeriod: int,
                    initialCooldownPeriod: int,
                    advanced: {
                      type: 'object',
                      properties: {
                        restoreToOriginalReplicaCount: { type: 'boolean' },
                        horizontalPodAutoscalerConfig: { type: 'object', properties: { name: str, behavior: preserve } },
                      },
                    },
                    triggers: {
                      type: 'array',
                      items: {
                        type: 'object',
                        required: ['type', 'metadata'],
                        properties: {
                          type: str,
                          name: str,
                          metricType: str,
                          useCachedMetrics: { type: 'boolean' },
                          metadata: stringMap,
                          authenticationRef: { type: 'object', required: ['name'], properties: { name: str, kind: str } },
                        },
                      },
                    },
                  },
                },
                status: preserve,
              },
            },
          },
        },
      ],
    },
  },
  {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'services.serving.knative.dev' },
    spec: {
      group: 'serving.knative.dev',
      names: { kind: 'Service', plural: 'services', listKind: 'ServiceList', singular: 'service', shortNames: ['ksvc'] },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  properties: {
                    traffic: { type: 'array', items: preserve },
                    template: {
                      type: 'object',
                      properties: {
                        metadata: { type: 'object', properties: { name: str, labels: stringMap, annotations: stringMap } },
                        spec: {
                          type: 'object',
                          properties: {
                            serviceAccountName: str,
                            containerConcurrency: int,
                            timeoutSeconds: int,
                            containers: {
                              type: 'array',
                              items: {
                                type: 'object',
                                properties: {
                                  name: str,
                                  image: str,
                                  args: { type: 'array', items: str },
                                  command: { type: 'array', items: str },
                                  ports: { type: 'array', items: { type: 'object', required: ['containerPort'], properties: { name: str, containerPort: int, protocol: str } } },
                                  env: { type: 'array', items: preserve },
                                  envFrom: { type: 'array', items: preserve },
                                  readinessProbe: preserve,
                                  livenessProbe: preserve,
                                  resources: preserve,
                                  securityContext: preserve,
                                  volumeMounts: { type: 'array', items: preserve },
                                },
                              },
                            },
                            volumes: { type: 'array', items: preserve },
                          },
                        },
                      },
                    },
                  },
                },
                status: preserve,
              },
            },
          },
        },
      ],
    },
  },
];

beforeAll(async () => {
  sb = await openSandbox('infra');
  kubeconfig = inject('kubeconfig');
  for (const crd of PLATFORM_CRDS) {
    // A cluster that already serves the kind (a real Knative or KEDA) is validated against that.
    if (kubectl(['get', 'crd', crd.metadata.name]).status === 0) continue;
    const r = kubectl(['create', '-f', '-'], JSON.stringify(crd));
    if (r.status !== 0) throw new Error(`installing ${crd.metadata.name}: ${r.stderr}`);
    installedCrds.push(crd.metadata.name);
  }
  if (installedCrds.length) {
    const r = kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...installedCrds.map((n) => `crd/${n}`)]);
    if (r.status !== 0) throw new Error(`CRDs not established: ${r.stderr}`);
  }
});
afterAll(async () => {
  for (const name of installedCrds) kubectl(['delete', 'crd', name, '--wait=false']);
  await sb.cleanup();
});

describe('infra/deploy manifests', () => {
  it.each(BUILDS)('%s builds and every object passes a server-side dry run with strict validation', (dir) => {
    const { text, objects } = build(dir, sb.namespace);
    expect(objects.length).toBeGreaterThanOrEqual(MIN_OBJECTS[dir] ?? 6);
    // Server-side apply: the API server validates, defaults and runs admission on every object.
    const r = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '--field-manager=ripple-infra-test', '-f', '-'], text);
    expect(r.stderr, `${dir}:\n${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(objects.length);
    for (const line of lines) expect(line).toMatch(/serverside-applied \(server dry run\)$/);
  });

  it('a typo in a manifest would be caught: strict validation refuses an unknown field and a non-string KEDA value', () => {
    const { objects } = build('overlays/scaled', sb.namespace);
    const scaled = of(objects, 'ScaledObject')[0]!;
    const broken = structuredClone(scaled) as K8sObject & { spec: { triggers: Array<{ metadata: Record<string, unknown> }> } };
    broken.spec.triggers[0]!.metadata.threshold = 8; // KEDA wants strings
    const keda = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '-f', '-'], JSON.stringify(broken));
    expect(keda.status).not.toBe(0);
    expect(keda.stderr).toMatch(/threshold/);
    const deployment = structuredClone(of(objects, 'Deployment')[0]!) as K8sObject & { spec: Record<string, unknown> };
    deployment.spec.replica = 2;
    const r = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '-f', '-'], JSON.stringify(deployment));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/\.spec\.replica: field not declared in schema/);
  });

  it('the watcher runs 2 replicas; every process has its own ServiceAccount; probes and ports match the ops server', () => {
    const { objects } = build('overlays/scaled');
    const deployments = of(objects, 'Deployment');
    const watcher = deployments.find((d) => d.metadata.name === 'ripple-watcher')!;
    expect(podTemplate(watcher).replicas).toBe(2);
    expect(podTemplate(watcher).template.spec.containers[0]!.args).toEqual(['watcher']);
    expect(of(objects, 'PodDisruptionBudget').map((p) => p.metadata.name)).toEqual(['ripple-watcher']);
    const accounts = new Set(of(objects, 'ServiceAccount').map((s) => s.metadata.name));
    const used = deployments.map((d) => podTemplate(d).template.spec.serviceAccountName);
    expect(new Set(used).size).toBe(used.length); // no two processes share an identity
    for (const d of deployments) {
      const t = podTemplate(d).template;
      expect(accounts, d.metadata.name).toContain(t.spec.serviceAccountName);
      const c = t.spec.containers[0]!;
      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(c.ports.map((p) => p.containerPort)).toEqual([8081]);
      expect(c.env.map((e) => e.name)).toContain('REDIS_URL');
      // Processes that run reconciles get time to finish them after SIGTERM.
      if (d.metadata.name !== 'ripple-ops') expect(t.spec.terminationGracePeriodSeconds ?? 30, d.metadata.name).toBeGreaterThanOrEqual(30);
    }
    for (const fn of FUNCTIONS) {
      const w = deployments.find((d) => d.metadata.name === `ripple-worker-${fn}`);
      expect(w, fn).toBeDefined();
      expect(podTemplate(w!).template.spec.containers[0]!.args).toEqual(['worker', '--functions', fn]);
      expect(podTemplate(w!).template.spec.serviceAccountName).toBe(`ripple-worker-${fn}`);
    }
    // The ops token reaches only the processes that serve the control routes.
    const withToken = deployments.filter((d) => podTemplate(d).template.spec.containers[0]!.env.some((e) => e.name === 'RIPPLE_OPS_TOKEN'));
    expect(withToken.map((d) => d.metadata.name)).toEqual(['ripple-ops']);
    // Every setting the ConfigMap gives is one runtime/config.ts knows.
    const config = of(objects, 'ConfigMap').find((c) => c.metadata.name === 'ripple-config')!;
    const data = z.object({ data: z.record(z.string(), z.string()) }).passthrough().parse(config).data;
    for (const key of Object.keys(data)) expect(Object.keys(processConfigSchema.shape), key).toContain(key);
    expect(() => loadProcessConfig({ ...data, REDIS_URL: 'redis://redis:6379' })).not.toThrow();
  });

  it('KEDA ScaledObjects scale each worker Deployment on the job-count metric the ops server exports', () => {
    const { objects } = build('overlays/scaled');
    const scaled = of(objects, 'ScaledObject');
    expect(scaled).toHaveLength(FUNCTIONS.length);
    const triggerSchema = z.object({
      scaleTargetRef: z.object({ name: z.string() }),
      minReplicaCount: z.number(),
      triggers: z.array(z.object({ type: z.literal('prometheus'), metadata: z.object({ query: z.string(), threshold: z.string(), serverAddress: z.string().url() }) })),
    });
    for (const so of scaled) {
      const s = triggerSchema.parse(spec(so));
      const target = of(objects, 'Deployment').find((d) => d.metadata.name === s.scaleTargetRef.name);
      expect(target, so.metadata.name).toBeDefined();
      const fn = podTemplate(target!).template.spec.containers[0]!.args[2];
      expect(s.minReplicaCount).toBeGreaterThanOrEqual(1);
      const query = s.triggers[0]!.metadata.query;
      expect(query).toContain(`${JOB_COUNT_METRIC}{queue="${fn}"`);
      expect(query).toMatch(/state=~"waiting\|prioritized\|active"/);
    }
    // Prometheus finds the exporter: the ops pods carry the scrape annotations.
    const ops = of(objects, 'Deployment').find((d) => d.metadata.name === 'ripple-ops')!;
    expect(podTemplate(ops).template.metadata?.annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '8081' });
    expect(podTemplate(ops).replicas).toBe(1);
  });

  it('Knative Services follow the runtime contract, and the dispatcher POSTs to each of them', () => {
    const { objects } = build('overlays/serverless');
    const services = of(objects, 'Service').filter((s) => s.apiVersion === 'serving.knative.dev/v1');
    expect(services.map((s) => s.metadata.name).sort()).toEqual([...FUNCTIONS].sort());
    const accounts = new Set(of(objects, 'ServiceAccount').map((s) => s.metadata.name));
    for (const svc of services) {
      const template = z
        .object({ template: z.object({ spec: z.object({ serviceAccountName: z.string(), timeoutSeconds: z.number(), containerConcurrency: z.number(), containers: z.array(containerSchema) }) }) })
        .parse(spec(svc)).template.spec;
      expect(accounts).toContain(template.serviceAccountName);
      expect(template.serviceAccountName).toBe(`ripple-worker-${svc.metadata.name}`);
      expect(template.timeoutSeconds).toBeLessThanOrEqual(600); // Knative's max-revision-timeout default
      expect(template.containers).toHaveLength(1);
      const c = template.containers[0]!;
      expect(c.args).toEqual(['serve', '--function', svc.metadata.name]);
      expect(c.ports).toEqual([{ name: 'http1', containerPort: 8080 }]); // one port; not 8012/8013/8022/9090/9091 (queue-proxy)
      expect(c.env.map((e) => e.name)).not.toContain('PORT'); // Knative sets it
      for (const probe of [c.readinessProbe, c.livenessProbe]) expect(probe?.httpGet?.port).toBeUndefined(); // Knative probes the user port
      expect(c.readinessProbe?.httpGet?.path).toBe('/_/ready');
      expect(c.livenessProbe?.httpGet?.path).toBe('/_/health');
      expect((svc.metadata as { labels?: Record<string, string> }).labels?.['networking.knative.dev/visibility']).toBe('cluster-local');
    }
    const dispatcher = of(objects, 'Deployment').find((d) => d.metadata.name === 'ripple-dispatcher')!;
    const args = podTemplate(dispatcher).template.spec.containers[0]!.args;
    expect(args[0]).toBe('worker');
    const targets = parseDispatchTargets(args.filter((_, i) => args[i - 1] === '--dispatch'));
    for (const t of targets) expect(t.url).toBe(`http://${t.fn}.ripple-system.svc.cluster.local`);
    expect(targets.map((t) => t.fn).sort()).toEqual([...FUNCTIONS].sort());
    // A whole call fits in the grace period: SIGTERM waits for in-flight calls.
    expect(podTemplate(dispatcher).template.spec.terminationGracePeriodSeconds).toBeGreaterThan(300);
  });

  it('serverless on plain Kubernetes: each function a Deployment running `ripple serve` behind a Service, scaled from 0 by KEDA on its queue; the dispatcher holds jobs until a pod is ready', () => {
    const { objects } = build('overlays/serverless-kubernetes');
    const accounts = new Set(of(objects, 'ServiceAccount').map((s) => s.metadata.name));
    const services = of(objects, 'Service').filter((s) => s.apiVersion === 'v1');
    const scaled = of(objects, 'ScaledObject');
    for (const fn of FUNCTIONS) {
      const d = of(objects, 'Deployment').find((o) => o.metadata.name === fn)!;
      expect(d, fn).toBeDefined();
      const t = podTemplate(d).template.spec;
      expect(accounts).toContain(t.serviceAccountName);
      expect(t.serviceAccountName).toBe(`ripple-worker-${fn}`);
      const c = t.containers[0]!;
      expect(c.args).toEqual(['serve', '--function', fn]);
      expect(c.env.find((e) => e.name === 'PORT')?.value).toBe('8081');
      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      const svc = services.find((s) => s.metadata.name === fn)!;
      expect(z.object({ ports: z.array(z.object({ port: z.number(), targetPort: z.string() })) }).parse(spec(svc)).ports).toEqual([expect.objectContaining({ port: 80, targetPort: 'ops' })]);
      const so = z
        .object({ scaleTargetRef: z.object({ name: z.string() }), minReplicaCount: z.number(), triggers: z.array(z.object({ type: z.string(), metadata: z.record(z.string(), z.string()) })) })
        .parse(spec(scaled.find((s) => s.metadata.name === fn)!));
      expect(so.scaleTargetRef.name).toBe(fn);
      expect(so.minReplicaCount).toBe(0);
      expect(so.triggers[0]!.metadata.query).toContain(`queue="${fn}"`);
    }
    const dispatcher = of(objects, 'Deployment').find((d) => d.metadata.name === 'ripple-dispatcher')!;
    const args = podTemplate(dispatcher).template.spec.containers[0]!.args;
    expect(args).toContain('--hold-until-ready');
    const targets = parseDispatchTargets(args.filter((_, i) => args[i - 1] === '--dispatch'));
    for (const t of targets) expect(t.url).toBe(`http://${t.fn}.ripple-system.svc.cluster.local`);
    // The watch it holds on: its functions' EndpointSlices, read-only, in its own namespace only.
    const role = of(objects, 'Role').find((r) => r.metadata.name === 'ripple-dispatcher')!;
    expect(z.object({ rules: z.array(z.unknown()) }).parse(role).rules).toEqual([{ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] }]);
  });

  it('the OpenFaaS stack is valid, its functions run `ripple serve` (or the webhook function) under identities that exist, and the dispatcher reaches the served ones', () => {
    const stackSchema = z
      .object({
        version: z.union([z.literal(1), z.literal('1.0')]), // YAML reads `1.0` as the number 1
        provider: z.object({ name: z.literal('openfaas'), gateway: z.string().url() }).strict(),
        functions: z.record(
          z.string(),
          z
            .object({
              image: z.string(),
              skip_build: z.literal(true),
              environment: z.record(z.string(), z.string()), // faas-cli wants strings; a bare number would not be one
              secrets: z.array(z.string()),
              readonly_root_filesystem: z.boolean(),
              labels: z.record(z.string(), z.string()),
              annotations: z.record(z.string(), z.string()),
              requests: z.object({ cpu: z.string(), memory: z.string() }).strict(),
              limits: z.object({ memory: z.string() }).strict(),
            })
            .strict(),
        ),
      })
      .strict();
    const stack = stackSchema.parse(parseYaml(readFileSync(path.join(deploy, 'openfaas', 'stack.yml'), 'utf8')));
    // The admission webhooks are a function too, but the API server calls them, not the dispatcher.
    const served = Object.keys(stack.functions).filter((name) => stack.functions[name]?.environment.RIPPLE_MODE !== 'webhook');
    expect(served.sort()).toEqual([...FUNCTIONS].sort());
    expect(Object.keys(stack.functions).filter((name) => !served.includes(name))).toEqual(['ops-lifecycle-webhook']);
    const rbac = build('openfaas/functions-rbac').objects;
    const accounts = new Set(of(rbac, 'ServiceAccount').map((s) => s.metadata.name));
    expect(of(rbac, 'ServiceAccount').every((s) => s.metadata.namespace === 'openfaas-fn')).toBe(true);
    expect(of(rbac, 'Role')).toHaveLength(0); // the autoscaler's ConfigMap access lives in ripple-system
    const dir = mkdtempSync(path.join(tmpdir(), 'ripple-openfaas-'));
    try {
      for (const [name, fn] of Object.entries(stack.functions)) {
        expect(accounts).toContain(fn.annotations['com.openfaas.serviceaccount']);
        if (!served.includes(name)) {
          // `ripple webhook --function` (cli/ripple.ts: RIPPLE_MODE=webhook without arguments): no Redis; a token
          // only with GraceDelete, which then cannot start without it.
          const config = loadProcessConfig(fn.environment);
          expect(config.RIPPLE_MODE).toBe('webhook');
          expect(config.REDIS_URL).toBeUndefined();
          expect(TRAFFIC_OFF_MODES).toContain(fn.environment.OPS_LIFECYCLE_TRAFFIC_OFF);
          expect(webhookEnv(fn.environment)).toEqual({ graceDelete: false, function: false });
          expect(fn.labels['com.openfaas.scale.min']).not.toBe('0'); // a cold start would hit failurePolicy
          continue;
        }
        expect(fn.environment.RIPPLE_MODE).toBe('serve');
        expect(fn.environment.RIPPLE_FUNCTION).toBe(name);
        // The environment is one Ripple accepts, with the secrets OpenFaaS mounts as files.
        const env: Record<string, string> = {};
        for (const [k, v] of Object.entries(fn.environment)) {
          if (!k.endsWith('_FILE')) env[k] = v;
          else {
            const secret = path.basename(v);
            expect(fn.secrets).toContain(secret);
            expect(v).toBe(`/var/openfaas/secrets/${secret}`);
            writeFileSync(path.join(dir, secret), secret === 'ripple-redis-url' ? 'redis://redis:6379\n' : 'a-function-token-of-32-characters\n');
            env[k] = path.join(dir, secret);
          }
        }
        const config = loadProcessConfig(env);
        expect(config.RIPPLE_MODE).toBe('serve');
        expect(config.REDIS_URL).toBe('redis://redis:6379');
        expect(config.RIPPLE_FUNCTION_TOKEN).toBe('a-function-token-of-32-characters');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const cp = build('openfaas/control-plane').objects;
    const dispatcher = of(cp, 'Deployment').find((d) => d.metadata.name === 'ripple-dispatcher')!;
    const args = podTemplate(dispatcher).template.spec.containers[0]!.args;
    const targets = parseDispatchTargets(args.filter((_, i) => args[i - 1] === '--dispatch'));
    expect(targets.map((t) => t.fn).sort()).toEqual(served.sort());
    for (const t of targets) expect(t.url).toBe(`${'http://gateway.openfaas.svc.cluster.local:8080'}/function/${t.fn}`);
    // The cross-namespace grant for the autoscaler has exactly the rules of its own Role.
    const own = of(build('overlays/scaled').objects, 'Role').find((r) => r.metadata.name === 'ripple-worker-reconcile-autoscaler')!;
    const cross = of(cp, 'Role').find((r) => r.metadata.name === 'ripple-openfaas-reconcile-autoscaler')!;
    expect((cross as { rules?: unknown }).rules).toEqual((own as { rules?: unknown }).rules);
  });

  it('every function Ripple ships has an identity, a worker, a Knative Service and an OpenFaaS function', () => {
    const names = allFunctions().map((f) => f.name);
    expect(names.length).toBeGreaterThan(0);
    const scaled = build('overlays/scaled').objects;
    const serverless = build('overlays/serverless').objects;
    const stack = z.object({ functions: z.record(z.string(), z.unknown()) }).parse(parseYaml(readFileSync(path.join(deploy, 'openfaas', 'stack.yml'), 'utf8')));
    for (const name of names) {
      expect(existsSync(path.join(deploy, 'rbac', name, 'rbac.yaml')), `rbac/${name}`).toBe(true);
      expect(of(scaled, 'Deployment').map((d) => d.metadata.name), name).toContain(`ripple-worker-${name}`);
      expect(of(serverless, 'Service').map((d) => d.metadata.name), name).toContain(name);
      expect(Object.keys(stack.functions), name).toContain(name);
    }
  });

  it('the container image build file compiles every module the CLI loads, runs the JavaScript without tsx, as non-root', () => {
    const dockerfile = readFileSync(path.join(deploy, 'Dockerfile'), 'utf8');
    const ignore = readFileSync(path.join(deploy, 'Dockerfile.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    // Node version: what package.json's engines allow, on a supported LTS line (22 or 24; 20 ended in 2026-04).
    const node = dockerfile.match(/^ARG NODE_VERSION=(\d+)\.(\d+)\.(\d+)$/m);
    expect(['22', '24']).toContain(node?.[1]);
    expect(dockerfile).toMatch(/^USER 1000:1000$/m);
    // Compiled in a build stage (npm run build: tsconfig.build.json from cli/ripple.ts), only dist/ copied out.
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "dist\/cli\/ripple\.js"\]$/m);
    expect(dockerfile).toMatch(/^RUN npm run build\b/m);
    expect(dockerfile).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    const build = z.object({ files: z.array(z.string()) }).passthrough().parse(JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '')));
    expect(build.files).toContain('cli/ripple.ts');

    // What reaches the build context: the allowlist minus the exclusions (the patterns used here).
    const toRegex = (glob: string) => new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*\*\//g, '(?:.*/)?').replace(/\*/g, '[^/]*')}(?:/.*)?$`);
    const inContext = (rel: string) => {
      let included = true;
      for (const rule of ignore) {
        const negate = rule.startsWith('!');
        const pattern = (negate ? rule.slice(1) : rule).replace(/\/$/, '');
        if (toRegex(pattern).test(rel)) included = negate;
      }
      return included;
    };
    // The build stage copies the whole context (`COPY . .`): what the allowlist lets through is compiled.
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) (\S+)$/gm)].flatMap((m) => m[1]!.split(/\s+/)).filter((src) => src !== '.');
    for (const src of [...copied, 'tsconfig.build.json', 'scripts/build.sh']) {
      expect(existsSync(path.join(root, src)), `COPY ${src}`).toBe(true);
      expect(inContext(src), `${src} is in the build context`).toBe(true);
    }
    expect(dockerfile).toMatch(/^COPY \. \.$/m);
    const inImage = inContext;

    // Walk the imports from the entry point: every local module must be in the image, every package
    // a production dependency.
    const pkg = z.object({ dependencies: z.record(z.string(), z.string()), devDependencies: z.record(z.string(), z.string()) }).passthrough().parse(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')));
    const seen = new Set<string>();
    const packages = new Set<string>();
    const queue = ['cli/ripple.ts'];
    while (queue.length) {
      const rel = queue.pop()!;
      if (seen.has(rel)) continue;
      seen.add(rel);
      expect(inImage(rel), `${rel} is in the image`).toBe(true);
      const source = readFileSync(path.join(root, rel), 'utf8');
      for (const m of source.matchAll(/(?:^|\n)\s*(?:import|export)\s+(?!type\b)[^'"`;]*?from\s+'([^']+)'|import\('([^']+)'\)|^\s*import\s+'([^']+)'/gm)) {
        const spec = m[1] ?? m[2] ?? m[3]!;
        // A dynamic import runs only when reached: the sandbox's testcontainers fallback never is in a
        // cluster (REDIS_URL is set), so a dev dependency is fine there; a static one would crash at start.
        if (m[2] !== undefined && !spec.startsWith('.')) {
          expect({ ...pkg.dependencies, ...pkg.devDependencies }, `${rel} imports ${spec}`).toHaveProperty([spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!]);
          continue;
        }
        if (spec.startsWith('.')) {
          const resolved = path.normalize(path.join(path.dirname(rel), spec.replace(/\.js$/, '.ts')));
          if (existsSync(path.join(root, resolved))) queue.push(resolved);
          else if (existsSync(path.join(root, path.join(path.dirname(rel), spec)))) queue.push(path.normalize(path.join(path.dirname(rel), spec)));
          else throw new Error(`${rel}: cannot resolve ${spec}`);
        } else if (!spec.startsWith('node:')) {
          packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
        }
      }
    }
    expect(seen.size).toBeGreaterThan(30);
    for (const p of packages) expect(Object.keys(pkg.dependencies), `${p} is a production dependency`).toContain(p);
    // Nothing loads TypeScript at run time: tsx (and the esbuild it brings) stays out of the image.
    expect(Object.keys(pkg.dependencies)).not.toContain('tsx');
    // Nothing test-only is imported by what ships.
    for (const rel of seen) expect(rel.startsWith('test/'), rel).toBe(false);
  });

  it('every directory under infra/deploy is used by a build, and nothing is left unreferenced', () => {
    const referenced = new Set<string>();
    const visit = (dir: string) => {
      if (referenced.has(dir)) return;
      referenced.add(dir);
      const k = z
        .object({ resources: z.array(z.string()).optional(), components: z.array(z.string()).optional(), configurations: z.array(z.string()).optional() })
        .passthrough()
        .parse(parseYaml(readFileSync(path.join(deploy, dir, 'kustomization.yaml'), 'utf8')));
      for (const entry of [...(k.resources ?? []), ...(k.components ?? []), ...(k.configurations ?? [])]) {
        const rel = path.normalize(path.join(dir, entry));
        if (existsSync(path.join(deploy, rel, 'kustomization.yaml'))) visit(rel);
        else referenced.add(rel);
      }
    };
    // infra/deploy/webhook is applied on its own (it needs cert-manager): ops-lifecycle-webhook-manifests.test.ts.
    // The opt-in GraceDelete component is added by an operator beside ops-lifecycle's identity: infra-rbac.test.ts;
    // its webhook side (registration, flag, the webhook's RBAC) beside infra/deploy/webhook: helm-chart.test.ts.
    for (const b of [...BUILDS, 'webhook', 'webhook/grace-delete', 'rbac/ops-lifecycle/grace-delete']) visit(b);
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(path.join(deploy, dir))) {
        const rel = path.join(dir, e);
        if (statSync(path.join(deploy, rel)).isDirectory()) walk(rel);
        else files.push(rel);
      }
    };
    walk('.');
    const standalone = new Set(['Dockerfile', 'Dockerfile.dockerignore', 'README.md', 'openfaas/stack.yml']);
    for (const f of files) {
      const normal = path.normalize(f);
      if (standalone.has(normal) || normal.endsWith('kustomization.yaml')) continue;
      expect(referenced, normal).toContain(normal);
    }
  });
});
