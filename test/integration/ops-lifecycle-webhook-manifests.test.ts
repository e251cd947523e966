import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { opsLifecycleWebhooks } from '../../functions/ops-lifecycle/admission/webhooks.js';
import { mutatingWebhookConfiguration } from '../../runtime/webhook/registration.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// infra/deploy/webhook: the webhooks as a function with TLS in the process (a cert-manager Certificate's Secret)
// and their registration through the Service, caBundle by cert-manager's CA injector. cert-manager is not in
// the sandbox, so its objects are checked for what the rest relies on; everything else goes through the real
// API server's strict server-side dry run.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const kubectlBin = existsSync(path.join(root, '.cache/control-plane/bin/kubectl')) ? path.join(root, '.cache/control-plane/bin/kubectl') : 'kubectl';
const objectSchema = z.object({ apiVersion: z.string(), kind: z.string(), metadata: z.object({ name: z.string(), namespace: z.string().optional(), annotations: z.record(z.string(), z.string()).optional() }).passthrough() }).passthrough();
type K8sObject = z.infer<typeof objectSchema>;

function build(namespace?: string, dir = 'infra/deploy/webhook'): K8sObject[] {
  let target = path.join(root, dir);
  const tmp = namespace ? mkdtempSync(path.join(tmpdir(), 'ripple-webhook-kustomize-')) : undefined;
  if (tmp) {
    writeFileSync(path.join(tmp, 'kustomization.yaml'), `namespace: ${namespace}\nresources:\n  - ${path.relative(tmp, target)}\n`);
    target = tmp;
  }
  try {
    const r = spawnSync(kubectlBin, ['kustomize', target], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    return parseAllDocuments(r.stdout).map((d) => d.toJS() as unknown).filter((d) => d !== null).map((d) => objectSchema.parse(d));
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}

const one = (objects: K8sObject[], kind: string, name?: string): K8sObject => {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  expect(found, `${kind} ${name ?? ''}`).toHaveLength(1);
  return found[0] as K8sObject;
};

describe('infra/deploy/webhook', () => {
  let sb: TestSandbox;
  let kubeconfig: string;
  beforeAll(async () => {
    sb = await openSandbox('opslc-hookman');
    kubeconfig = inject('kubeconfig');
  });
  afterAll(async () => {
    await sb?.cleanup();
  });

  it('registers exactly the webhooks the code defines, through the Service, with the CA of the serving Certificate', () => {
    const objects = build();
    const registration = one(objects, 'MutatingWebhookConfiguration');
    const fromCode = mutatingWebhookConfiguration({ name: registration.metadata.name, baseUrl: 'https://unused', caBundlePem: '', webhooks: opsLifecycleWebhooks() });
    const strip = (c: unknown) => z.object({ webhooks: z.array(z.object({ clientConfig: z.unknown() }).passthrough()) }).parse(c).webhooks.map(({ clientConfig: _, ...w }) => w);
    expect(strip(registration)).toEqual(strip(fromCode));

    const service = one(objects, 'Service', 'ripple-ops-lifecycle-webhook');
    const port = z.object({ spec: z.object({ ports: z.array(z.object({ port: z.number(), targetPort: z.string() })) }) }).parse(service).spec.ports[0];
    const clients = z.object({ webhooks: z.array(z.object({ clientConfig: z.object({ service: z.object({ namespace: z.string(), name: z.string(), port: z.number(), path: z.string() }) }).strict() })) }).parse(registration).webhooks;
    expect(clients.map((c) => c.clientConfig.service.path)).toEqual(opsLifecycleWebhooks().map((w) => `/${w.path}`));
    for (const { clientConfig } of clients) {
      expect(clientConfig.service).toMatchObject({ namespace: service.metadata.namespace, name: service.metadata.name, port: port?.port });
    }

    // The name the API server dials is <service>.<namespace>.svc; the certificate must carry it.
    const certificate = one(objects, 'Certificate', 'ripple-ops-lifecycle-webhook');
    const cert = z.object({ spec: z.object({ secretName: z.string(), dnsNames: z.array(z.string()), issuerRef: z.object({ name: z.string() }) }) }).parse(certificate).spec;
    expect(cert.dnsNames).toContain(`${service.metadata.name}.${service.metadata.namespace}.svc`);
    expect(registration.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(`${certificate.metadata.namespace}/${certificate.metadata.name}`);
    one(objects, 'Issuer', cert.issuerRef.name);

    // The function serves that Secret's files over HTTPS on the port the Service targets.
    const deployment = one(objects, 'Deployment', 'ripple-ops-lifecycle-webhook');
    const pod = z
      .object({
        spec: z.object({
          template: z.object({
            spec: z.object({
              containers: z.array(z.object({ args: z.array(z.string()), ports: z.array(z.object({ name: z.string(), containerPort: z.number() })), volumeMounts: z.array(z.object({ name: z.string(), mountPath: z.string() })), readinessProbe: z.object({ httpGet: z.object({ path: z.string(), port: z.string(), scheme: z.string() }) }) }).passthrough()),
              volumes: z.array(z.object({ name: z.string(), secret: z.object({ secretName: z.string() }).optional() }).passthrough()),
            }).passthrough(),
          }),
        }),
      })
      .parse(deployment).spec.template.spec;
    const c = pod.containers[0];
    expect(c?.args.slice(0, 2)).toEqual(['webhook', '--function']);
    const arg = (flag: string) => c?.args[c.args.indexOf(flag) + 1];
    expect(c?.ports.find((p) => p.name === port?.targetPort)?.containerPort).toBe(Number(arg('--port')));
    const tlsVolume = pod.volumes.find((v) => v.secret?.secretName === cert.secretName);
    const mount = c?.volumeMounts.find((m) => m.name === tlsVolume?.name)?.mountPath;
    expect(arg('--tls-cert-file')).toBe(`${mount}/tls.crt`);
    expect(arg('--tls-key-file')).toBe(`${mount}/tls.key`);
    expect(c?.readinessProbe.httpGet).toEqual({ path: '/_/ready', port: 'https', scheme: 'HTTPS' });
  });

  it('every object but cert-manager\'s passes the API server\'s strict server-side dry run', () => {
    const objects = build(sb.namespace).filter((o) => !o.apiVersion.startsWith('cert-manager.io/'));
    expect(objects.map((o) => o.kind).sort()).toEqual(['Deployment', 'MutatingWebhookConfiguration', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
    const text = objects.map((o) => JSON.stringify(o)).join('\n---\n');
    const r = spawnSync(kubectlBin, ['--kubeconfig', kubeconfig, 'apply', '--server-side', '--dry-run=server', '--validate=strict', '--field-manager=ripple-webhook-test', '-f', '-'], { input: text, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toHaveLength(objects.length);
  });
});

// The same webhooks on a serverless platform, registered by URL: a Knative Service behind Knative's domain TLS
// (infra/deploy/components/knative/webhook) and the OpenFaaS function behind a TLS ingress before the gateway
// (infra/deploy/openfaas/stack.yml + infra/deploy/openfaas/webhook). Neither platform is in the sandbox:
// infra-manifests.test.ts dry-runs these builds (with its Knative Service CRD); here they are held to the code.
describe('infra/deploy webhook manifests for Knative and OpenFaaS', () => {
  const webhookSchema = z.object({ clientConfig: z.object({ url: z.string() }).strict() }).passthrough();
  const registrationOf = (objects: K8sObject[]) => {
    const registration = one(objects, 'MutatingWebhookConfiguration');
    const webhooks = z.object({ webhooks: z.array(webhookSchema) }).parse(registration).webhooks;
    return { registration, webhooks, urls: webhooks.map((w) => new URL(w.clientConfig.url)) };
  };
  /** The code's webhooks registered at `baseUrl`, without caBundle (the CA injector's, or the system roots). */
  const fromCode = (name: string, baseUrl: string) =>
    z
      .object({ webhooks: z.array(z.object({ clientConfig: z.object({ url: z.string() }).passthrough() }).passthrough()) })
      .parse(mutatingWebhookConfiguration({ name, baseUrl, caBundlePem: '', webhooks: opsLifecycleWebhooks() }))
      .webhooks.map(({ clientConfig, ...w }) => ({ ...w, clientConfig: { url: clientConfig.url } }));

  it('the Knative Service runs the webhook function, and the registration calls its HTTPS host with the code\'s webhooks', () => {
    const objects = build(undefined, 'infra/deploy/components/knative/webhook');
    const ksvc = one(objects, 'Service', 'ops-lifecycle-webhook');
    expect(ksvc.apiVersion).toBe('serving.knative.dev/v1');
    // Not cluster-local: the API server dials the external domain.
    expect(z.object({ labels: z.record(z.string(), z.string()).optional() }).passthrough().parse(ksvc.metadata).labels?.['networking.knative.dev/visibility']).toBeUndefined();
    const template = z
      .object({
        spec: z.object({
          template: z.object({
            metadata: z.object({ annotations: z.record(z.string(), z.string()) }).passthrough(),
            spec: z.object({
              serviceAccountName: z.string(),
              timeoutSeconds: z.number(),
              containers: z.array(
                z
                  .object({
                    image: z.string(),
                    args: z.array(z.string()),
                    ports: z.array(z.object({ name: z.string(), containerPort: z.number() })),
                    env: z.array(z.object({ name: z.string(), value: z.string().optional() }).passthrough()),
                    readinessProbe: z.object({ httpGet: z.object({ path: z.string() }).strict() }),
                    livenessProbe: z.object({ httpGet: z.object({ path: z.string() }).strict() }),
                  })
                  .passthrough(),
              ),
            }).passthrough(),
          }),
        }),
      })
      .parse(ksvc).spec.template;
    const c = template.spec.containers[0];
    expect(template.spec.containers).toHaveLength(1);
    expect(c?.args).toEqual(['webhook', '--function']);
    expect(c?.image).toBe('ghcr.io/ripple-dev/ripple:0.1.0');
    expect(c?.ports).toEqual([{ name: 'http1', containerPort: 8080 }]); // Knative sets PORT from it
    expect(c?.env.map((e) => e.name)).not.toContain('PORT');
    expect(c?.env.map((e) => e.name)).toContain('OPS_LIFECYCLE_TRAFFIC_OFF');
    expect(c?.env.find((e) => e.name === 'RIPPLE_WEBHOOK_GRACE_DELETE')?.value).toBe('false');
    expect(c?.readinessProbe.httpGet.path).toBe('/_/ready');
    expect(c?.livenessProbe.httpGet.path).toBe('/_/health');
    // A cold start would hit the API server's timeout and failurePolicy Fail.
    expect(Number(template.metadata.annotations['autoscaling.knative.dev/min-scale'])).toBeGreaterThanOrEqual(1);
    expect(template.spec.timeoutSeconds).toBeGreaterThanOrEqual(Math.max(...opsLifecycleWebhooks().map((w) => w.timeoutSeconds ?? 10)));
    const account = one(objects, 'ServiceAccount', template.spec.serviceAccountName);
    expect((account as { automountServiceAccountToken?: boolean }).automountServiceAccountToken).toBe(false);

    const { registration, webhooks, urls } = registrationOf(objects);
    // Knative's default domain template: <service>.<namespace>.<domain>.
    const host = urls[0]?.host ?? '';
    expect(host.startsWith(`${ksvc.metadata.name}.${ksvc.metadata.namespace}.`)).toBe(true);
    expect(webhooks).toEqual(fromCode(registration.metadata.name, `https://${host}`));
    expect(registration.metadata.annotations?.['cert-manager.io/inject-ca-from-secret']).toMatch(/^[a-z0-9-]+\/[a-z0-9-]+$/);
    // One of the ways at a time: each registers the same name.
    expect(registration.metadata.name).toBe(one(build(), 'MutatingWebhookConfiguration').metadata.name);
  });

  it('the OpenFaaS function is reached through the gateway route /function/<name> behind TLS, with the code\'s webhooks', () => {
    const stack = z
      .object({ functions: z.record(z.string(), z.object({ environment: z.record(z.string(), z.string()), annotations: z.record(z.string(), z.string()) }).passthrough()) })
      .parse(parseYaml(readFileSync(path.join(root, 'infra/deploy/openfaas/stack.yml'), 'utf8')));
    const names = Object.entries(stack.functions).filter(([, fn]) => fn.environment.RIPPLE_MODE === 'webhook').map(([name]) => name);
    expect(names).toEqual(['ops-lifecycle-webhook']);
    const fn = stack.functions['ops-lifecycle-webhook'];

    const { registration, webhooks, urls } = registrationOf(build(undefined, 'infra/deploy/openfaas/webhook'));
    const origin = urls[0]?.origin ?? '';
    expect(origin.startsWith('https://')).toBe(true);
    expect(webhooks).toEqual(fromCode(registration.metadata.name, `${origin}/function/${names[0]}`));
    expect(registration.metadata.annotations?.['cert-manager.io/inject-ca-from']).toMatch(/^[a-z0-9-]+\/[a-z0-9-]+$/);
    expect(registration.metadata.name).toBe(one(build(), 'MutatingWebhookConfiguration').metadata.name);

    // Its identity exists in the function namespace and holds no token.
    const rbac = build(undefined, 'infra/deploy/openfaas/functions-rbac');
    const account = one(rbac, 'ServiceAccount', fn?.annotations['com.openfaas.serviceaccount']);
    expect((account as { automountServiceAccountToken?: boolean }).automountServiceAccountToken).toBe(false);
  });
});
