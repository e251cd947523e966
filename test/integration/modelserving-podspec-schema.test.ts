// Issue 30, item 4: the ModelServing CRD carries the real PodSpec schema (generated from the API server's
// OpenAPI, api/openapi/), so the API server itself judges pod templates at apply time: a misspelled
// container field is refused with a message naming it (server-side field validation Strict, as
// `kubectl apply` asks by default), `kubectl explain` shows a template's fields, and a template that uses
// the PodSpec's int-or-string and quantity fields is stored as written (no field pruned).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { z } from 'zod';
import { KubeApiError, kubeRequest } from '../../kube/raw.js';
import { collectionPath, Resources } from '../../kube/resources.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';
import { IMAGE_A, kubectlPath, msManifest, mustGetMs } from '../fixtures/modelserving-fixtures.js';

const run = promisify(execFile);

type Json = Record<string, unknown>;
/** The first role of a manifest made by msManifest, to edit its templates in place. */
const firstRole = (body: Json) => ((body.spec as Json).template as { roles: Json[] }).roles[0] as Json;

describe('ModelServing pod templates validated by the API server', () => {
  let sb: TestSandbox;
  const kubectl = async (args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> => {
    const child = run(kubectlPath(), ['--kubeconfig', inject('kubeconfig'), '-n', sb.namespace, ...args]);
    if (stdin !== undefined) {
      child.child.stdin?.end(stdin);
    }
    try {
      const { stdout, stderr } = await child;
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  };

  beforeAll(async () => {
    sb = await openSandbox('ms-podspec');
  });
  afterAll(async () => {
    await sb?.cleanup();
  });

  it('kubectl apply refuses a misspelled container field, naming it', async () => {
    const body = msManifest('typo', sb.namespace);
    const entry = firstRole(body).entryTemplate as { spec: { containers: Json[] } };
    entry.spec.containers[0] = { ...entry.spec.containers[0], imagePullPolicyy: 'Always' };
    const r = await kubectl(['apply', '--validate=strict', '-f', '-'], stringify(body));
    expect(r.code, r.stdout).not.toBe(0);
    expect(r.stderr).toMatch(/unknown field "spec\.template\.roles\[0\]\.entryTemplate\.spec\.containers\[0\]\.imagePullPolicyy"/);
    expect((await kubectl(['get', 'modelserving', 'typo'])).stderr).toMatch(/NotFound/);
  });

  it('the API refuses a misspelled field of a worker template under fieldValidation=Strict, naming it', async () => {
    const body = msManifest('typo2', sb.namespace, { roles: [{ name: 'main', workerReplicas: 1 }] });
    const worker = firstRole(body).workerTemplate as { spec: Json };
    worker.spec = { ...worker.spec, contaners: [{ name: 'extra', image: IMAGE_A }] };
    let refusal: KubeApiError | undefined;
    try {
      await kubeRequest(sb.kc, collectionPath(Resources.modelServing, sb.namespace), { method: 'POST', body, query: { fieldValidation: 'Strict' } });
    } catch (err) {
      if (!(err instanceof KubeApiError)) throw err;
      refusal = err;
    }
    expect(refusal?.code).toBe(400);
    expect(refusal?.message).toMatch(/unknown field "spec\.template\.roles\[0\]\.workerTemplate\.spec\.contaners"/);
  });

  it('a field of the wrong type is refused even without strict field validation', async () => {
    const body = msManifest('wrongtype', sb.namespace);
    const entry = firstRole(body).entryTemplate as { spec: { containers: Json[] } };
    entry.spec.containers[0] = { ...entry.spec.containers[0], ports: [{ containerPort: 'eighty' }] };
    const r = await kubectl(['apply', '--validate=false', '-f', '-'], stringify(body));
    expect(r.code, r.stdout).not.toBe(0);
    expect(r.stderr).toMatch(/spec\.template\.roles\[0\]\.entryTemplate\.spec\.containers\[0\]\.ports\[0\]\.containerPort: Invalid value: "string"/);
  });

  it('kubectl explain shows the fields of a pod template', async () => {
    const containers = await kubectl(['explain', 'modelservings.spec.template.roles.entryTemplate.spec.containers']);
    expect(containers.code, containers.stderr).toBe(0);
    expect(containers.stdout).toMatch(/FIELD:\s+containers <\[\]Object>/);
    for (const field of ['imagePullPolicy\\s+<string>', 'livenessProbe\\s+<Object>', 'resources\\s+<Object>', 'env\\s+<\\[\\]Object>']) {
      expect(containers.stdout).toMatch(new RegExp(field));
    }
    const port = await kubectl(['explain', 'modelservings.spec.template.roles.workerTemplate.spec.containers.readinessProbe.httpGet.port']);
    expect(port.code, port.stderr).toBe(0);
    // kubectl shows a CRD's int-or-string as <Object> (an anyOf without a type); its documentation is there.
    expect(port.stdout).toMatch(/FIELD:\s+port <Object>/);
    expect(port.stdout).toMatch(/Name or number of the port to access on the container\./);
  });

  it('a template using int-or-string, quantities, probes, volumes and affinity is stored as written', async () => {
    const spec = {
      containers: [
        {
          name: 'main',
          image: IMAGE_A,
          args: ['--port', '8000'],
          env: [{ name: 'A', value: '1' }, { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
          ports: [{ name: 'http', containerPort: 8000, protocol: 'TCP' }],
          resources: { requests: { cpu: 1, memory: '1Gi' }, limits: { cpu: '1500m', 'nvidia.com/gpu': 1 } },
          readinessProbe: { httpGet: { path: '/health', port: 'http' }, periodSeconds: 5 },
          livenessProbe: { tcpSocket: { port: 8000 } },
          volumeMounts: [{ name: 'shm', mountPath: '/dev/shm' }],
        },
      ],
      volumes: [{ name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }],
      affinity: {
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 10, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'x' } } } },
          ],
        },
      },
      tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }],
      terminationGracePeriodSeconds: 30,
    };
    const body = msManifest('full', sb.namespace);
    firstRole(body).entryTemplate = { metadata: { labels: { app: 'x' } }, spec };
    const r = await kubectl(['apply', '--validate=strict', '-f', '-'], stringify(body));
    expect(r.code, r.stderr).toBe(0);
    const stored = await mustGetMs(sb, 'full');
    const storedSpec = z.object({ template: z.object({ roles: z.array(z.object({ entryTemplate: z.object({ spec: z.unknown() }) })) }) }).parse(stored.spec);
    expect(storedSpec.template.roles[0]?.entryTemplate.spec).toEqual(spec);
  });
});
