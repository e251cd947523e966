// Bad input on the sandbox: specs the CRD rejects outright (schema and CEL, no webhook needed), and
// specs only the function can judge, reported on status (ConfigValid=False, phase Failed, Stalled)
// with a message that names the field and says what to fix — without a retry loop, while the queue
// keeps reconciling other ModelServings, and healing as soon as the spec is fixed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiError } from '../../kube/raw.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  IMAGE_A,
  condition,
  createMs,
  listPods,
  modelServingFunctions,
  msManifest,
  mustGetMs,
  patchMs,
  roleManifest,
  waitConverged,
  type MsRead,
} from '../fixtures/modelserving-fixtures.js';

async function rejection(sb: TestSandbox, body: Record<string, unknown>): Promise<string> {
  try {
    await createMs(sb, body);
  } catch (err) {
    if (err instanceof KubeApiError && err.code === 422) return err.message;
    throw err;
  }
  throw new Error('the API server accepted an invalid ModelServing');
}

type Spec = Record<string, unknown>;
const withSpec = (sb: TestSandbox, name: string, mutate: (spec: Spec) => void): Record<string, unknown> => {
  const body = msManifest(name, sb.namespace, { replicas: 1 });
  mutate(body.spec as Spec);
  return body;
};
const template = (spec: Spec) => spec.template as { roles: Array<Record<string, unknown>>; gangPolicy?: unknown };

async function waitInvalid(sb: TestSandbox, name: string): Promise<MsRead> {
  return waitFor(`${name} reported invalid`, 30_000, async () => {
    const ms = await mustGetMs(sb, name);
    return condition(ms, 'ConfigValid')?.status === 'False' ? ms : false;
  });
}

describe('ModelServing bad input', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;

  beforeAll(async () => {
    sb = await openSandbox('ms-bad');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it('the CRD rejects what its schema and CEL rules can judge, saying what is wrong', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['upper-case role name', withSpec(sb, 'bad1', (s) => (template(s).roles = [roleManifest({ name: 'Prefill' })])), /roles\[0\]\.name/],
      [
        'workers without a worker template',
        withSpec(sb, 'bad2', (s) => (template(s).roles = [{ ...roleManifest({ name: 'main' }), workerReplicas: 2 }])),
        /workerTemplate with containers is required/,
      ],
      [
        'maxUnavailable 0',
        withSpec(sb, 'bad3', (s) => (s.rolloutStrategy = { rollingUpdateConfiguration: { maxUnavailable: 0 } })),
        /maxUnavailable cannot be 0/,
      ],
      [
        'ServingGroupRecreate with RoleRollingUpdate',
        withSpec(sb, 'bad4', (s) => {
          s.recoveryPolicy = 'ServingGroupRecreate';
          s.rolloutStrategy = { type: 'RoleRollingUpdate' };
        }),
        /ServingGroupRecreate cannot be combined with/,
      ],
      [
        'duplicate role names',
        withSpec(sb, 'bad5', (s) => (template(s).roles = [roleManifest({ name: 'a' }), roleManifest({ name: 'a' })])),
        /role names must be unique/,
      ],
      ['negative replicas', withSpec(sb, 'bad6', (s) => (s.replicas = -1)), /spec\.replicas/],
      [
        // The CRD embeds the PodSpec schema (api/openapi/): a malformed quantity is refused at apply time.
        'a malformed resource quantity',
        withSpec(sb, 'bad7', (s) => {
          template(s).roles = [
            { ...roleManifest({ name: 'main' }), entryTemplate: { spec: { containers: [{ name: 'main', image: IMAGE_A, resources: { requests: { cpu: 'lots' } } }] } } },
          ];
        }),
        /spec\.template\.roles\[0\]\.entryTemplate\.spec\.containers\[0\]\.resources\.requests\.cpu: Invalid value: "lots"/,
      ],
    ];
    for (const [what, body, message] of cases) {
      expect(await rejection(sb, body), what).toMatch(message);
    }
  });

  it('reports what only the function can judge on status, does not retry in a loop, and keeps the queue flowing', async () => {
    // Three invalid ModelServings the CRD accepts…
    await createMs(
      sb,
      withSpec(sb, 'nogang', (s) => (template(s).gangPolicy = { minRoleReplicas: { decode: 1 } })),
    );
    await createMs(
      sb,
      withSpec(sb, 'noimage', (s) => (template(s).roles = [{ ...roleManifest({ name: 'main' }), entryTemplate: { spec: { containers: [{ name: 'main' }] } } }])),
    );
    await createMs(
      sb,
      withSpec(sb, 'badpod', (s) => {
        template(s).roles = [
          // Well-formed for the schema, but a request above its limit is refused by pod validation only.
          { ...roleManifest({ name: 'main' }), entryTemplate: { spec: { containers: [{ name: 'main', image: IMAGE_A, resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } }] } } },
        ];
      }),
    );
    // …and a valid one created after them, which must converge regardless.
    await createMs(sb, msManifest('good', sb.namespace, { replicas: 2 }));

    const nogang = await waitInvalid(sb, 'nogang');
    expect(condition(nogang, 'ConfigValid')).toMatchObject({
      reason: 'InvalidSpec',
      message: 'spec.template.gangPolicy.minRoleReplicas.decode: there is no role named "decode" in spec.template.roles',
    });
    expect(nogang.status?.phase).toBe('Failed');
    expect(condition(nogang, 'Ready')?.status).toBe('False');
    expect(condition(nogang, 'Stalled')?.status).toBe('True');

    const noimage = await waitInvalid(sb, 'noimage');
    expect(condition(noimage, 'ConfigValid')?.message).toBe('spec.template.roles[0].entryTemplate.spec.containers[0].image: an image is required');

    // The API server refuses the pod built from this template: the function names the template.
    const badpod = await waitInvalid(sb, 'badpod');
    expect(condition(badpod, 'ConfigValid')?.message).toMatch(/^spec\.template\.roles\[0\]\.entryTemplate: the API server rejected pod badpod-0-main-0-0 built from it: .*must be less than or equal to cpu limit/);

    await waitConverged(sb, 'good', { podsPerGroup: 1 });
    expect(await listPods(sb, 'nogang')).toHaveLength(0);

    // No retry loop: the reported status stays as written.
    const rv = (await mustGetMs(sb, 'nogang')).metadata.resourceVersion;
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await mustGetMs(sb, 'nogang')).metadata.resourceVersion).toBe(rv);

    // Fixing the spec heals it.
    await patchMs(sb, 'noimage', { spec: { template: { roles: [roleManifest({ name: 'main' })] } } });
    const fixed = await waitConverged(sb, 'noimage', { podsPerGroup: 1 });
    expect(condition(fixed.ms, 'ConfigValid')?.status).toBe('True');
    expect(fixed.ms.status?.phase).toBe('Ready');
  });

  it('an unknown plugin is reported on status (ConfigValid=False) and nothing is created; the built-in lws-standard-labels runs', async () => {
    await createMs(sb, withSpec(sb, 'plug', (s) => (s.plugins = [{ name: 'lws-standard-labels', type: 'BuiltIn' }, { name: 'my-plugin', type: 'BuiltIn' }])));
    const plug = await waitInvalid(sb, 'plug');
    expect(condition(plug, 'ConfigValid')).toMatchObject({
      reason: 'InvalidSpec',
      message: 'spec.plugins[1].name: unknown plugin "my-plugin"; the built-in plugins are: lws-standard-labels',
    });
    expect(plug.status?.phase).toBe('Failed');
    expect(await listPods(sb, 'plug')).toHaveLength(0);
    // Dropping it heals the ModelServing; the built-in one is no reason for a warning or a failure.
    await patchMs(sb, 'plug', { spec: { plugins: [{ name: 'lws-standard-labels', type: 'BuiltIn' }] } });
    const fixed = await waitConverged(sb, 'plug', { podsPerGroup: 1 });
    expect(condition(fixed.ms, 'ConfigValid')?.status).toBe('True');
  });
});
