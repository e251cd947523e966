import { describe, expect, it } from 'vitest';
import { closureOf } from './refresh-snapshot.js';
import { openApiSnapshot, SNAPSHOT_ROOTS } from './snapshot.js';
import { firstSentence, OpenApiConversionError, QUANTITY_PATTERN, structuralFromOpenApi } from './structural.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const Q = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const IOS = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';

/** A cut-down document in the shape the API server serves (allOf references with defaults, oneOf quantities). */
const schemas: Record<string, Record<string, unknown>> = {
  Pod: {
    description: 'A pod. More text here.',
    type: 'object',
    required: ['containers'],
    properties: {
      containers: {
        description: 'The containers.',
        type: 'array',
        items: { default: {}, allOf: [ref('Container')] },
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
        'x-kubernetes-patch-merge-key': 'name',
        'x-kubernetes-patch-strategy': 'merge',
      },
      restartPolicy: { description: 'Restart policy.', type: 'string', default: 'Always', enum: ['Always', 'Never'] },
      nodeSelector: { type: 'object', additionalProperties: { type: 'string', default: '' }, 'x-kubernetes-map-type': 'atomic' },
      claim: { description: 'Claim template.', allOf: [ref('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta')] },
    },
  },
  Container: {
    type: 'object',
    required: ['name'],
    properties: {
      name: { type: 'string', default: '' },
      port: { description: 'Name or number.', allOf: [ref(IOS)] },
      cpu: { allOf: [ref(Q)] },
      ports: {
        type: 'array',
        items: { default: {}, allOf: [ref('Port')] },
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['containerPort', 'protocol'],
      },
    },
  },
  Port: {
    type: 'object',
    required: ['containerPort'],
    properties: {
      containerPort: { type: 'integer', format: 'int32', default: 0 },
      protocol: { type: 'string', default: 'TCP', enum: ['TCP', 'UDP'] },
    },
  },
  [IOS]: { description: 'IntOrString.', format: 'int-or-string', oneOf: [{ type: 'integer' }, { type: 'string' }] },
  [Q]: { description: 'Quantity.', oneOf: [{ type: 'string' }, { type: 'number' }] },
  'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': { type: 'object', properties: { name: { type: 'string' }, managedFields: { type: 'array', items: { type: 'object' } } } },
};

describe('structuralFromOpenApi', () => {
  const pod = structuralFromOpenApi(schemas, 'Pod', { descriptions: 'full' });
  const container = pod.properties?.containers?.items;

  it('inlines references, keeping the referring field description, and keeps list and map types', () => {
    expect(pod.properties?.containers).toMatchObject({ type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] });
    expect(pod.properties?.containers).not.toHaveProperty('x-kubernetes-patch-strategy');
    expect(container?.properties?.port?.description).toBe('Name or number.');
    expect(pod.properties?.nodeSelector).toEqual({ type: 'object', additionalProperties: { type: 'string' }, 'x-kubernetes-map-type': 'atomic' });
  });

  it('makes IntOrString and Quantity int-or-string, a quantity with a pattern', () => {
    expect(container?.properties?.port).toEqual({ description: 'Name or number.', 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] });
    expect(container?.properties?.cpu).toMatchObject({ 'x-kubernetes-int-or-string': true, pattern: QUANTITY_PATTERN });
    const quantity = new RegExp(QUANTITY_PATTERN);
    for (const ok of ['1', '500m', '1.5', '1Gi', '2e3', '+1', '.5', '100Mi']) expect(quantity.test(ok), ok).toBe(true);
    for (const bad of ['lots', '1 Gi', '1gi', '1.5.2', '']) expect(quantity.test(bad), bad).toBe(false);
  });

  it('drops defaults and enums, but keeps the default of a list-map key that is not required', () => {
    expect(pod.properties?.restartPolicy).toEqual({ description: 'Restart policy.', type: 'string' });
    expect(container?.properties?.name).toEqual({ type: 'string' });
    const port = container?.properties?.ports?.items;
    expect(port?.properties?.protocol).toEqual({ type: 'string', default: 'TCP' });
    expect(port?.properties?.containerPort).toEqual({ type: 'integer', format: 'int32' });
  });

  it('keeps only labels and annotations of an embedded ObjectMeta', () => {
    expect(pod.properties?.claim?.properties && Object.keys(pod.properties.claim.properties)).toEqual(['labels', 'annotations']);
  });

  it('cuts descriptions to their first sentence, or drops them', () => {
    expect(structuralFromOpenApi(schemas, 'Pod', { descriptions: 'first-sentence' }).description).toBe('A pod.');
    expect(JSON.stringify(structuralFromOpenApi(schemas, 'Pod', { descriptions: 'none' }))).not.toContain('description');
    expect(firstSentence('Name of the port. More info: https://x.io/a.b\n\nSecond paragraph.')).toBe('Name of the port.');
    expect(firstSentence('No full stop\n\nhere')).toBe('No full stop');
  });

  it('refuses what it cannot make structural instead of writing a CRD that drops data', () => {
    const bad = (s: Record<string, unknown>) => () => structuralFromOpenApi({ ...schemas, Pod: s }, 'Pod', { descriptions: 'none' });
    expect(bad({ type: 'object', properties: { x: { type: 'object' } } })).toThrow(/Pod\.x: an object without properties/);
    expect(bad({ type: 'object', properties: { x: { oneOf: [{ type: 'string' }, { type: 'boolean' }] } } })).toThrow(OpenApiConversionError);
    expect(bad({ type: 'object', properties: { x: { type: 'string', pattern: 'a' } } })).toThrow(/keyword "pattern"/);
    expect(bad({ type: 'object', properties: { self: ref('Pod') } })).toThrow(/recursive schema Pod/);
    const keyWithoutDefault = { type: 'array', items: { type: 'object', properties: { k: { type: 'string' } } }, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['k'] };
    expect(bad({ type: 'object', properties: { l: keyWithoutDefault } })).toThrow(/neither required nor defaulted/);
  });
});

describe('the committed snapshot', () => {
  const snapshot = openApiSnapshot();

  it('holds exactly the schemas its roots reach, and says where it came from', () => {
    expect(snapshot.source.roots).toEqual([...SNAPSHOT_ROOTS]);
    expect(Object.keys(snapshot.schemas).sort()).toEqual(closureOf(snapshot.schemas, SNAPSHOT_ROOTS));
    expect(snapshot.source.document).toMatch(/^kube-apiserver v1\.\d+\.\d+: GET \/openapi\/v3\/api\/v1/);
  });

  it('converts the whole PodSpec', () => {
    const podSpec = structuralFromOpenApi(snapshot.schemas, 'io.k8s.api.core.v1.PodSpec', { descriptions: 'none' });
    const container = podSpec.properties?.containers?.items;
    expect(container?.properties?.ports?.items?.properties?.protocol?.default).toBe('TCP');
    expect(podSpec.properties?.imagePullSecrets?.items?.properties?.name?.default).toBe('');
    expect(container?.properties?.livenessProbe?.properties?.httpGet?.properties?.port?.['x-kubernetes-int-or-string']).toBe(true);
  });
});
