import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { generateCrd, jsonSchemaToStructural, SchemaConversionError, toStructuralSchema, type JSONSchemaProps } from './crd.js';
import { CRD_DIR, renderCrds } from './generate-crds.js';

describe('checked-in CRDs', () => {
  it('are what the zod schemas generate (run `npm run crds` after changing a schema)', () => {
    for (const [file, text] of renderCrds()) {
      expect(readFileSync(join(CRD_DIR, file), 'utf8'), `infra/crds/${file} is stale`).toBe(text);
    }
  });
});

/** Every node must be structural: typed, or int-or-string, or preserving unknown fields. */
function assertStructural(node: JSONSchemaProps, path = ''): void {
  const raw = node as Record<string, unknown>;
  for (const bad of ['$ref', '$defs', 'definitions', 'oneOf', 'allOf', 'const', 'uniqueItems', '$schema']) {
    expect(raw[bad], `${path}: ${bad}`).toBeUndefined();
  }
  if (node.properties) expect(node.additionalProperties, `${path}: properties beside additionalProperties`).toBeUndefined();
  expect(raw.additionalProperties === false, `${path}: additionalProperties false`).toBe(false);
  if (!node['x-kubernetes-int-or-string'] && !node['x-kubernetes-preserve-unknown-fields']) {
    expect(node.type, `${path}: untyped`).toBeDefined();
  }
  for (const [k, v] of Object.entries(node.properties ?? {})) assertStructural(v, `${path}.${k}`);
  if (node.items) assertStructural(node.items, `${path}[]`);
  if (node.additionalProperties) assertStructural(node.additionalProperties, `${path}.*`);
}

describe('the LeaderWorkerSet CRD (shaped from sigs.k8s.io/lws v1)', () => {
  const crd = parse(renderCrds().get('leaderworkerset.yaml') ?? '') as ReturnType<typeof generateCrd>;
  const version = crd.spec.versions[0];
  const root = version?.schema.openAPIV3Schema as JSONSchemaProps;
  const lwt = root.properties?.spec?.properties?.leaderWorkerTemplate as JSONSchemaProps;

  it("has LWS's names, scale subresource and printer columns", () => {
    expect(crd.metadata.name).toBe('leaderworkersets.leaderworkerset.x-k8s.io');
    expect(crd.spec.names).toMatchObject({ kind: 'LeaderWorkerSet', plural: 'leaderworkersets', shortNames: ['lws'] });
    expect(version?.name).toBe('v1');
    expect(version?.subresources?.scale).toEqual({ specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.hpaPodSelector' });
    expect(version?.additionalPrinterColumns?.map((c) => c.name)).toEqual(['Ready', 'Desired', 'Up-to-date', 'Age']);
  });

  it('is structural, with the PodSpec schema in both templates and LWS defaults', () => {
    assertStructural(root);
    expect(lwt.required).toEqual(['workerTemplate']);
    for (const which of ['leaderTemplate', 'workerTemplate']) {
      const podSpec = lwt.properties?.[which]?.properties?.spec as JSONSchemaProps;
      expect(podSpec.properties?.containers?.['x-kubernetes-list-map-keys']).toEqual(['name']);
    }
    expect(lwt.properties?.size).toMatchObject({ default: 1, minimum: 1 });
    expect(lwt.properties?.restartPolicy?.default).toBe('RecreateGroupOnPodRestart');
    expect(root.properties?.spec?.properties?.startupPolicy?.default).toBe('LeaderCreated');
  });
});

describe('the ModelServing CRD', () => {
  const crd = parse(renderCrds().get('modelserving.yaml') ?? '') as ReturnType<typeof generateCrd>;
  const version = crd.spec.versions[0];
  const root = version?.schema.openAPIV3Schema as JSONSchemaProps;
  const spec = root.properties?.spec as JSONSchemaProps;
  const role = spec.properties?.template?.properties?.roles?.items as JSONSchemaProps;

  it('has the names, subresources and printer columns of Kthena, plus Phase and Ready', () => {
    expect(crd.metadata.name).toBe('modelservings.workload.serving.volcano.sh');
    expect(crd.spec.names).toEqual({ kind: 'ModelServing', listKind: 'ModelServingList', plural: 'modelservings', singular: 'modelserving' });
    expect(crd.spec.scope).toBe('Namespaced');
    expect(version?.subresources).toEqual({
      status: {},
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.labelSelector' },
    });
    expect(version?.additionalPrinterColumns?.map((c) => c.name)).toEqual(['Replicas', 'Available', 'Updated', 'Phase', 'Ready', 'Age']);
    expect(version?.additionalPrinterColumns?.find((c) => c.name === 'Ready')?.jsonPath).toBe('.status.conditions[?(@.type=="Ready")].status');
  });

  it('is a structural schema', () => {
    assertStructural(root);
    expect(root.properties?.metadata).toEqual({ type: 'object' });
  });

  it("embeds Kubernetes' PodSpec schema in both pod templates: no unknown field kept, containers merged by name", () => {
    for (const which of ['entryTemplate', 'workerTemplate']) {
      const template = role.properties?.[which] as JSONSchemaProps;
      expect(template.properties?.metadata?.properties && Object.keys(template.properties.metadata.properties)).toEqual(['labels', 'annotations']);
      const podSpec = template.properties?.spec as JSONSchemaProps;
      expect(JSON.stringify(podSpec)).not.toContain('x-kubernetes-preserve-unknown-fields');
      expect(podSpec.required).toEqual(['containers']);
      expect(podSpec.properties?.containers).toMatchObject({ type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] });
      const container = podSpec.properties?.containers?.items as JSONSchemaProps;
      expect(container.required).toEqual(['name']);
      expect(container.properties?.imagePullPolicy).toEqual({ description: 'Image pull policy.', type: 'string' });
      expect(container.properties?.resources?.properties?.limits?.additionalProperties).toMatchObject({ 'x-kubernetes-int-or-string': true });
    }
    const rules = (role['x-kubernetes-validations'] ?? []).map((v) => v.rule);
    expect(rules).toContain('size(self.entryTemplate.spec.containers) > 0');
  });

  it('stays well inside the API server and etcd size limits', () => {
    const json = JSON.stringify(crd).length;
    // etcd refuses requests over 1.5 MiB; docs/modelserving.md gives the size (about 330 kB).
    expect(json).toBeLessThan(400_000);
  });

  it('writes int-or-string fields and defaults as Kthena does', () => {
    const ru = spec.properties?.rolloutStrategy?.properties?.rollingUpdateConfiguration?.properties;
    expect(ru?.maxUnavailable).toMatchObject({ 'x-kubernetes-int-or-string': true, default: 1, anyOf: [{ type: 'integer' }, { type: 'string' }] });
    expect(ru?.maxUnavailable?.type).toBeUndefined();
    expect(spec.properties?.replicas).toMatchObject({ type: 'integer', format: 'int32', default: 1, minimum: 0 });
    expect(spec.properties?.recoveryPolicy).toMatchObject({ default: 'RoleRecreate', enum: ['ServingGroupRecreate', 'RoleRecreate', 'None'] });
    expect(spec.properties?.schedulerName?.default).toBeUndefined();
    expect(spec.properties?.template?.properties?.restartGracePeriodSeconds).toMatchObject({ format: 'int64', default: 0 });
  });

  it('carries the webhook rules that CEL can express', () => {
    const rules = (n: JSONSchemaProps | undefined) => (n?.['x-kubernetes-validations'] ?? []).map((v) => v.message);
    expect(rules(spec.properties?.template?.properties?.roles)).toEqual(['role names must be unique']);
    expect(rules(role)).toEqual([
      'entryTemplate.spec.containers needs at least one container',
      'a workerTemplate with containers is required when workerReplicas is greater than 0',
    ]);
    expect(rules(spec)).toHaveLength(4);
    expect(rules(spec.properties?.rolloutStrategy)).toHaveLength(1);
    expect(rules(spec.properties?.template?.properties?.gangPolicy?.properties?.minRoleReplicas)).toEqual([
      'minRoleReplicas cannot be changed once set',
    ]);
    expect(role.properties?.name).toMatchObject({ maxLength: 12, pattern: '^[a-z]([-a-z0-9]*[a-z0-9])?$' });
  });

  it('makes plugin config opaque JSON', () => {
    const plugin = spec.properties?.plugins?.items as JSONSchemaProps;
    expect(plugin.properties?.config).toEqual({ description: 'Opaque configuration of the plugin.', 'x-kubernetes-preserve-unknown-fields': true });
  });
});

describe('generateCrd (generic)', () => {
  const Widget = z.object({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: z.object({ name: z.string() }),
    spec: z.object({ size: z.int32().min(1), tags: z.array(z.string()).optional() }),
    status: z.object({ ready: z.boolean().optional() }).optional(),
  });

  it('takes group, names, scope, versions and subresources from options', () => {
    const crd = generateCrd({
      group: 'example.dev',
      kind: 'Widget',
      plural: 'widgets',
      shortNames: ['wd'],
      categories: ['all'],
      scope: 'Cluster',
      versions: [
        { name: 'v1beta1', schema: Widget, storage: false, deprecated: true },
        {
          name: 'v1',
          schema: Widget,
          storage: true,
          subresources: { status: true },
          additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }],
        },
      ],
    });
    expect(crd.metadata.name).toBe('widgets.example.dev');
    expect(crd.spec.names).toEqual({ kind: 'Widget', listKind: 'WidgetList', plural: 'widgets', singular: 'widget', shortNames: ['wd'], categories: ['all'] });
    expect(crd.spec.scope).toBe('Cluster');
    expect(crd.spec.versions.map((v) => [v.name, v.storage, v.served])).toEqual([
      ['v1beta1', false, true],
      ['v1', true, true],
    ]);
    expect(crd.spec.versions[1]?.subresources).toEqual({ status: {} });
    expect(crd.spec.versions[0]?.subresources).toBeUndefined();
    expect(crd.spec.versions[1]?.schema.openAPIV3Schema.properties?.spec?.properties?.size).toEqual({ type: 'integer', format: 'int32', minimum: 1 });
  });

  it('refuses two storage versions', () => {
    expect(() =>
      generateCrd({
        group: 'g',
        kind: 'K',
        plural: 'ks',
        scope: 'Namespaced',
        versions: [
          { name: 'a', schema: Widget, storage: true },
          { name: 'b', schema: Widget, storage: true },
        ],
      }),
    ).toThrow(/exactly one version/);
  });
});

describe('toStructuralSchema', () => {
  it('inlines references and merges allOf', () => {
    const out = jsonSchemaToStructural({
      type: 'object',
      properties: { a: { $ref: '#/$defs/A' }, b: { allOf: [{ $ref: '#/$defs/A' }], description: 'b' } },
      $defs: { A: { type: 'object', properties: { x: { type: 'string' } }, required: ['x'] } },
    });
    expect(out.properties?.a).toEqual({ type: 'object', properties: { x: { type: 'string' } }, required: ['x'] });
    expect(out.properties?.b?.description).toBe('b');
    expect(out.properties?.b?.properties?.x).toEqual({ type: 'string' });
  });

  it('turns loose objects and unknown values into preserve-unknown-fields, drops additionalProperties: false', () => {
    const out = toStructuralSchema(z.object({ loose: z.looseObject({ a: z.string() }), free: z.unknown(), strict: z.strictObject({ b: z.string() }) }));
    expect(out.properties?.loose?.['x-kubernetes-preserve-unknown-fields']).toBe(true);
    expect(out.properties?.free).toEqual({ 'x-kubernetes-preserve-unknown-fields': true });
    expect((out.properties?.strict as Record<string, unknown>).additionalProperties).toBeUndefined();
  });

  it('keeps maps as additionalProperties', () => {
    expect(toStructuralSchema(z.record(z.string(), z.int32()))).toEqual({ type: 'object', additionalProperties: { type: 'integer', format: 'int32' } });
  });

  it('turns unions of literals into enums and nullable unions into nullable', () => {
    const out = toStructuralSchema(z.object({ e: z.union([z.literal('a'), z.literal('b')]), n: z.string().nullable() }));
    expect(out.properties?.e).toEqual({ type: 'string', enum: ['a', 'b'] });
    expect(out.properties?.n).toEqual({ type: 'string', nullable: true });
  });

  it('detects int-or-string unions without the marker', () => {
    expect(toStructuralSchema(z.union([z.int(), z.string()]))).toEqual({
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string' }],
    });
  });

  it('merges object unions', () => {
    const out = toStructuralSchema(z.union([z.object({ a: z.string(), c: z.string() }), z.object({ b: z.string(), c: z.string() })]));
    expect(out).toEqual({ type: 'object', properties: { a: { type: 'string' }, c: { type: 'string' }, b: { type: 'string' } }, required: ['c'] });
  });

  it('fails loudly on what a structural schema cannot hold', () => {
    expect(() => toStructuralSchema(z.union([z.string(), z.boolean()]))).toThrow(SchemaConversionError);
    expect(() => jsonSchemaToStructural({ type: 'array', items: [{ type: 'string' }] })).toThrow(/tuples/);
    expect(() => jsonSchemaToStructural({ type: 'array', items: { type: 'string' }, uniqueItems: true })).toThrow(/uniqueItems/);
    expect(() => jsonSchemaToStructural({ type: 'object', patternProperties: {} })).toThrow(/patternProperties/);
    const Tree: z.ZodType = z.lazy(() => z.object({ children: z.array(Tree) }));
    expect(() => toStructuralSchema(Tree)).toThrow(/recursive/);
  });
});
