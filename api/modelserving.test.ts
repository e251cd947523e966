import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseModelServing, progressDeadlineOf, resolveIntOrPercent, type ModelServing } from './modelserving.js';

/** A prefill/decode deployment written the way Kthena's users write them (Kthena's field names). */
const KTHENA_SAMPLE = `
apiVersion: workload.serving.volcano.sh/v1alpha1
kind: ModelServing
metadata:
  name: qwen-pd
  namespace: serving
  annotations:
    scheduling.volcano.sh/queue-name: inference
spec:
  replicas: 2
  schedulerName: volcano
  recoveryPolicy: ServingGroupRecreate
  rolloutStrategy:
    type: ServingGroupRollingUpdate
    rollingUpdateConfiguration:
      maxUnavailable: 50%
      partition: 1
  template:
    restartGracePeriodSeconds: 30
    gangPolicy:
      minRoleReplicas:
        prefill: 1
        decode: 1
    networkTopology:
      groupPolicy:
        mode: soft
        highestTierAllowed: 2
    roles:
      - name: prefill
        replicas: 2
        workerReplicas: 1
        entryTemplate:
          metadata:
            labels:
              app.kubernetes.io/component: prefill
          spec:
            initContainers:
              - name: fetch-model
                image: ghcr.io/example/downloader:1.2
                args: ["--source", "Qwen/Qwen3-8B", "--output-dir", "/models"]
                volumeMounts: [{ name: models, mountPath: /models }]
            containers:
              - name: vllm
                image: vllm/vllm-openai:v0.10.0
                command: ["sh", "-c"]
                args: ["vllm serve /models --port 8000 --kv-transfer-config '{\\"kv_role\\":\\"kv_producer\\"}'"]
                env:
                  - { name: NCCL_SOCKET_IFNAME, value: eth0 }
                ports: [{ containerPort: 8000, name: http }]
                readinessProbe:
                  httpGet: { path: /health, port: 8000 }
                  periodSeconds: 5
                resources:
                  requests: { cpu: "8", memory: 64Gi, nvidia.com/gpu: "1" }
                  limits: { nvidia.com/gpu: "1" }
                volumeMounts: [{ name: models, mountPath: /models }]
            volumes:
              - name: models
                emptyDir: {}
        workerTemplate:
          spec:
            containers:
              - name: vllm-worker
                image: vllm/vllm-openai:v0.10.0
                args: ["ray start --address=$(ENTRY_ADDRESS):6379 --block"]
                resources:
                  requests: { cpu: "8", nvidia.com/gpu: "1" }
      - name: decode
        replicas: 1
        workerReplicas: 0
        entryTemplate:
          spec:
            containers:
              - name: vllm
                image: vllm/vllm-openai:v0.10.0
                args: ["vllm serve /models --port 8000"]
                resources:
                  requests: { cpu: 4, memory: 32Gi }
`;

function base(): Record<string, unknown> & { spec: Record<string, unknown> & { template: { roles: Array<Record<string, unknown>> } } } {
  return {
    apiVersion: 'workload.serving.volcano.sh/v1alpha1',
    kind: 'ModelServing',
    metadata: { name: 'llm', namespace: 'ns' },
    spec: {
      template: {
        roles: [{ name: 'prefill', workerReplicas: 0, entryTemplate: { spec: { containers: [{ name: 'm', image: 'img' }] } } }],
      },
    },
  };
}

function errorsOf(obj: unknown): string[] {
  const r = parseModelServing(obj);
  return r.ok ? [] : r.errors;
}

function ok(obj: unknown): ModelServing {
  const r = parseModelServing(obj);
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.value;
}

describe('parseModelServing', () => {
  it('accepts a Kthena manifest unchanged, keeping pod template fields it does not model', () => {
    const ms = ok(parse(KTHENA_SAMPLE));
    expect(ms.metadata.name).toBe('qwen-pd');
    expect(ms.spec.replicas).toBe(2);
    expect(ms.spec.template.restartGracePeriodSeconds).toBe(30);
    const prefill = ms.spec.template.roles[0];
    expect(prefill?.entryTemplate.spec.volumes).toEqual([{ name: 'models', emptyDir: {} }]);
    expect((prefill?.entryTemplate.spec.containers[0] as Record<string, unknown>).readinessProbe).toBeDefined();
    expect(ms.spec.template.networkTopology?.groupPolicy).toEqual({ mode: 'soft', highestTierAllowed: 2 });
  });

  it("applies Kthena's defaults", () => {
    const ms = ok(base());
    expect(ms.spec.replicas).toBe(1);
    expect(ms.spec.recoveryPolicy).toBe('RoleRecreate');
    expect(ms.spec.template.restartGracePeriodSeconds).toBe(0);
    expect(ms.spec.template.roles[0]?.replicas).toBe(1);
    expect(ms.spec.template.roles[0]?.maxUnavailable).toBe(1);
    expect(ms.spec.rolloutStrategy).toBeUndefined();
    const withStrategy = ok({ ...base(), spec: { ...base().spec, rolloutStrategy: { rollingUpdateConfiguration: {} } } });
    expect(withStrategy.spec.rolloutStrategy).toEqual({ type: 'ServingGroupRollingUpdate', rollingUpdateConfiguration: { maxUnavailable: 1 } });
  });

  it('reads the progress deadline annotation, and says how to fix a bad one', () => {
    const withDeadline = (v: string) => ({ ...base(), metadata: { name: 'llm', namespace: 'ns', annotations: { 'ripple.dev/progress-deadline-seconds': v } } });
    expect(progressDeadlineOf(ok(base()).metadata.annotations)).toEqual({ seconds: 600 });
    expect(progressDeadlineOf(ok(withDeadline('120')).metadata.annotations)).toEqual({ seconds: 120 });
    for (const bad of ['0', '-5', '10m', '1.5', '']) {
      expect(errorsOf(withDeadline(bad))).toEqual([
        `metadata.annotations["ripple.dev/progress-deadline-seconds"]: "${bad}" must be a whole number of seconds from 1 to 2147483647, e.g. "600"`,
      ]);
    }
  });

  it('leaves schedulerName empty (resolved at pod creation), unlike Kthena\'s "volcano" default', () => {
    expect(ok(base()).spec.schedulerName).toBeUndefined();
  });

  it('reports structural problems with field paths', () => {
    const m = base();
    m.spec.replicas = -1;
    (m.spec.template.roles[0] as Record<string, unknown>).name = 'Prefill_1';
    expect(errorsOf(m)).toEqual([
      expect.stringMatching(/^spec\.replicas: /),
      expect.stringMatching(/^spec\.template\.roles\[0\]\.name: a role name must be a DNS-1035 label/),
    ]);
  });

  it('requires at least one container and one role, at most four roles', () => {
    const m = base();
    m.spec.template.roles[0] = { name: 'a', workerReplicas: 0, entryTemplate: { spec: { containers: [] } } };
    expect(errorsOf(m)).toEqual(['spec.template.roles[0].entryTemplate.spec.containers: a pod template needs at least one container']);
    m.spec.template.roles = [];
    expect(errorsOf(m)).toEqual(['spec.template.roles: at least one role is required']);
    m.spec.template.roles = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ ...base().spec.template.roles[0], name }));
    expect(errorsOf(m)).toEqual(['spec.template.roles: at most 4 roles are allowed']);
  });

  describe("the admission webhook's rules", () => {
    const role = (extra: Record<string, unknown>) => ({ ...base().spec.template.roles[0], ...extra });
    const withSpec = (spec: Record<string, unknown>, roles?: Array<Record<string, unknown>>) => {
      const m = base();
      Object.assign(m.spec, spec);
      if (roles) m.spec.template.roles = roles;
      return m;
    };

    it('rejects duplicate role names', () => {
      expect(errorsOf(withSpec({}, [role({ name: 'a' }), role({ name: 'a' })]))).toEqual([
        'spec.template.roles[1].name: role name "a" is used more than once',
      ]);
    });

    it('requires workerTemplate when workerReplicas > 0', () => {
      expect(errorsOf(withSpec({}, [role({ workerReplicas: 2 })]))).toEqual([
        'spec.template.roles[0].workerTemplate: required because workerReplicas is 2',
      ]);
      expect(errorsOf(withSpec({}, [role({ workerReplicas: 1, workerTemplate: { spec: { containers: [] } } })]))).toEqual([
        'spec.template.roles[0].workerTemplate.spec.containers: needs at least one container because workerReplicas is 1',
      ]);
    });

    it("accepts an empty workerTemplate without workers (as in Kthena's examples)", () => {
      expect(errorsOf(withSpec({}, [role({ workerReplicas: 0, workerTemplate: { spec: { containers: [] } } })]))).toEqual([]);
    });

    it('rejects a headless Service name longer than a DNS label at ordinal 0 (what replicas cannot change)', () => {
      const m = withSpec({}, [role({ name: 'decoder12345', workerReplicas: 1, workerTemplate: { spec: { containers: [{ name: 'w', image: 'x' }] } } })]);
      (m.metadata as Record<string, unknown>).name = 'a'.repeat(50);
      expect(errorsOf(m)[0]).toMatch(/^spec\.template\.roles\[0\]: the headless Service "a{50}-0-decoder12345-0-0" of role "decoder12345" would be 69 characters/);
    });

    it('leaves names that depend on spec.replicas to the planner (an HPA may change replicas; issue 13)', () => {
      const m = withSpec({}, [role({ name: 'prefill', workerReplicas: 1, workerTemplate: { spec: { containers: [{ name: 'w', image: 'x' }] } } })]);
      (m.metadata as Record<string, unknown>).name = 'a'.repeat(49);
      (m.spec as Record<string, unknown>).replicas = 10;
      expect(errorsOf(m)).toEqual([]);
      (m.spec as Record<string, unknown>).replicas = 1000;
      expect(errorsOf(m)).toEqual([]);
    });

    it('rejects a name too long for a label value', () => {
      const m = base();
      (m.metadata as Record<string, unknown>).name = 'a'.repeat(64);
      expect(errorsOf(m)[0]).toMatch(/^metadata\.name: 64 characters; at most 63/);
    });

    it('rejects a ModelServing name that cannot prefix Service names', () => {
      const m = base();
      (m.metadata as Record<string, unknown>).name = 'my.model';
      expect(errorsOf(m)[0]).toMatch(/^metadata\.name: "my\.model" must be a DNS-1035 label/);
    });

    it('checks int-or-percent values', () => {
      const cfg = (v: Record<string, unknown>) => withSpec({ rolloutStrategy: { rollingUpdateConfiguration: v } });
      expect(errorsOf(cfg({ maxUnavailable: '120%' }))).toEqual([
        'spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: "120%" must be a non-negative integer or a percentage from 0% to 100%',
      ]);
      expect(errorsOf(cfg({ partition: -1 }))).toEqual([
        'spec.rolloutStrategy.rollingUpdateConfiguration.partition: must be a non-negative integer',
      ]);
      const zero = 'spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: cannot be 0 unless maxSurge is greater than 0';
      expect(errorsOf(cfg({ maxUnavailable: 0 }))).toEqual([zero]);
      expect(errorsOf(cfg({ maxUnavailable: '0%' }))).toEqual([zero]);
      expect(errorsOf(cfg({ maxUnavailable: 0, maxSurge: 0 }))).toEqual([zero]);
      // Kthena #1626: with a surge, maxUnavailable may be 0.
      expect(errorsOf(cfg({ maxUnavailable: 0, maxSurge: 1 }))).toEqual([]);
      expect(errorsOf(cfg({ maxUnavailable: '0%', maxSurge: '25%' }))).toEqual([]);
      expect(errorsOf(cfg({ maxSurge: '120%' }))).toEqual([
        'spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: "120%" must be a non-negative integer or a percentage from 0% to 100%',
      ]);
      // A percentage that rounds down to 0 for the current replicas is allowed: the scale subresource can
      // change replicas at any time, so the controller clamps it to 1 instead.
      expect(errorsOf(cfg({ maxUnavailable: '10%', partition: '50%' }))).toEqual([]);
    });

    it('forbids rollingUpdateConfiguration with RoleRollingUpdate', () => {
      const m = withSpec({ rolloutStrategy: { type: 'RoleRollingUpdate', rollingUpdateConfiguration: { maxUnavailable: 1 } } });
      expect(errorsOf(m)).toEqual([
        'spec.rolloutStrategy.rollingUpdateConfiguration: applies only to ServingGroupRollingUpdate; with RoleRollingUpdate set maxUnavailable and partition on each role',
      ]);
    });

    it('allows a role partition only with RoleRollingUpdate', () => {
      expect(errorsOf(withSpec({}, [role({ partition: 1 })]))).toEqual([
        'spec.template.roles[0].partition: applies only when spec.rolloutStrategy.type is RoleRollingUpdate; remove it or change the type',
      ]);
      expect(errorsOf(withSpec({ rolloutStrategy: { type: 'RoleRollingUpdate' } }, [role({ partition: 1, replicas: 2 })]))).toEqual([]);
    });

    it('refuses a plugin that is not built in, naming the ones that are (Kthena cannot build its chain either)', () => {
      expect(errorsOf(withSpec({ plugins: [{ name: 'lws-standard-labels' }, { name: 'my-plugin' }] }))).toEqual([
        'spec.plugins[1].name: unknown plugin "my-plugin"; the built-in plugins are: lws-standard-labels',
      ]);
    });

    it("bounds a role's maxUnavailable by its replicas under RoleRollingUpdate", () => {
      const rr = { rolloutStrategy: { type: 'RoleRollingUpdate' } };
      expect(errorsOf(withSpec(rr, [role({ replicas: 2, maxUnavailable: 3 })]))).toEqual([
        "spec.template.roles[0].maxUnavailable: 3 is greater than the role's replicas (2)",
      ]);
      expect(errorsOf(withSpec(rr, [role({ replicas: 4, maxUnavailable: '10%' })]))).toEqual([
        'spec.template.roles[0].maxUnavailable: resolves to 0 for 4 replicas and maxSurge is 0; use at least 1, or set a maxSurge',
      ]);
      // Ignored under ServingGroupRollingUpdate, as in Kthena.
      expect(errorsOf(withSpec({}, [role({ replicas: 2, maxUnavailable: 3 })]))).toEqual([]);
      // Kthena #1626: a role surge allows maxUnavailable 0; the surge belongs to RoleRollingUpdate.
      expect(errorsOf(withSpec(rr, [role({ replicas: 2, maxUnavailable: 0, maxSurge: 1 })]))).toEqual([]);
      expect(errorsOf(withSpec({}, [role({ replicas: 2, maxSurge: 1 })]))).toEqual([
        'spec.template.roles[0].maxSurge: applies only when spec.rolloutStrategy.type is RoleRollingUpdate; remove it or change the type',
      ]);
    });

    it('accepts a role scaled to 0 with the default maxUnavailable (kthena#1749)', () => {
      expect(errorsOf(withSpec({ rolloutStrategy: { type: 'RoleRollingUpdate' } }, [role({ replicas: 0 })]))).toEqual([]);
    });

    it('rejects ServingGroupRecreate with RoleRollingUpdate', () => {
      expect(errorsOf(withSpec({ recoveryPolicy: 'ServingGroupRecreate', rolloutStrategy: { type: 'RoleRollingUpdate' } }))[0]).toMatch(
        /^spec\.rolloutStrategy\.type: RoleRollingUpdate cannot be combined with recoveryPolicy ServingGroupRecreate/,
      );
    });

    it('checks gangPolicy.minRoleReplicas against the roles', () => {
      const m = withSpec({}, [role({ replicas: 2 })]);
      (m.spec.template as Record<string, unknown>).gangPolicy = { minRoleReplicas: { prefill: 3, missing: 1 } };
      expect(errorsOf(m)).toEqual([
        "spec.template.gangPolicy.minRoleReplicas.prefill: 3 is more than the role's replicas (2)",
        'spec.template.gangPolicy.minRoleReplicas.missing: there is no role named "missing" in spec.template.roles',
      ]);
    });

    it('rejects images with whitespace and containers without an image', () => {
      const m = withSpec({}, [role({ entryTemplate: { spec: { containers: [{ name: 'a', image: 'my image' }, { name: 'b' }] } } })]);
      expect(errorsOf(m)).toEqual([
        'spec.template.roles[0].entryTemplate.spec.containers[0].image: an image reference cannot contain whitespace',
      ]);
      const n = withSpec({}, [role({ entryTemplate: { spec: { containers: [{ name: 'a' }] } } })]);
      expect(errorsOf(n)).toEqual(['spec.template.roles[0].entryTemplate.spec.containers[0].image: an image is required']);
    });
  });
});

describe('resolveIntOrPercent', () => {
  it('rounds percentages as asked', () => {
    expect(resolveIntOrPercent('50%', 3, true)).toBe(2);
    expect(resolveIntOrPercent('50%', 3, false)).toBe(1);
    expect(resolveIntOrPercent(4, 3, true)).toBe(4);
    expect(resolveIntOrPercent('x', 3, true)).toBeUndefined();
  });
});
