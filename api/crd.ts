/**
 * A generic generator from zod schemas to Kubernetes CustomResourceDefinitions (apiextensions.k8s.io/v1).
 *
 * zod's JSON Schema output (OpenAPI 3.0 flavour) is close to what the API server wants, but a CRD
 * schema must be *structural*: every node has a type (or is int-or-string / preserve-unknown-fields),
 * no `$ref`, no `additionalProperties` beside `properties`, no `uniqueItems`, and `metadata` is left to
 * the API server. `toStructuralSchema` makes those conversions and fails loudly on shapes it cannot
 * express, so a schema change never produces a CRD the API server would reject at apply time.
 *
 * Schema-level extras ride on zod's `.meta()`: `x-kubernetes-*` keys (CEL validations, int-or-string,
 * list/map types) and the few OpenAPI keywords zod has no method for (`maxProperties`, `format`).
 */
import { z } from 'zod';
import { stringify } from 'yaml';
import { embeddedKubernetesSchema } from './openapi/snapshot.js';

/** A node of a structural OpenAPI v3 schema, with the wire names the API server reads. */
export interface JSONSchemaProps {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  title?: string;
  format?: string;
  default?: unknown;
  enum?: unknown[];
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  required?: string[];
  properties?: Record<string, JSONSchemaProps>;
  additionalProperties?: JSONSchemaProps;
  items?: JSONSchemaProps;
  anyOf?: JSONSchemaProps[];
  example?: unknown;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: ValidationRule[];
}

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

export interface PrinterColumn {
  name: string;
  type: 'integer' | 'number' | 'string' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

export interface CrdVersionOptions {
  name: string;
  /** The whole resource: an object schema with (at least) `spec`; `apiVersion`, `kind`, `metadata` are replaced. */
  schema: z.ZodType;
  served?: boolean;
  storage?: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  subresources?: { status?: boolean; scale?: ScaleSubresource };
  additionalPrinterColumns?: PrinterColumn[];
}

export interface CrdOptions {
  group: string;
  kind: string;
  plural: string;
  singular?: string;
  listKind?: string;
  shortNames?: string[];
  categories?: string[];
  scope: 'Namespaced' | 'Cluster';
  versions: CrdVersionOptions[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames?: string[]; categories?: string[] };
    scope: 'Namespaced' | 'Cluster';
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      deprecated?: boolean;
      deprecationWarning?: string;
      schema: { openAPIV3Schema: JSONSchemaProps };
      subresources?: { status?: Record<string, never>; scale?: ScaleSubresource };
      additionalPrinterColumns?: PrinterColumn[];
    }>;
  };
}

export class SchemaConversionError extends Error {
  override readonly name = 'SchemaConversionError';
  constructor(path: string, problem: string) {
    super(`${path || '<root>'}: ${problem}`);
  }
}

export function generateCrd(opts: CrdOptions): CustomResourceDefinition {
  const storage = opts.versions.filter((v) => v.storage ?? opts.versions.length === 1);
  if (storage.length !== 1) throw new Error(`${opts.kind}: exactly one version must be the storage version`);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${opts.plural}.${opts.group}`,
      ...(opts.labels ? { labels: opts.labels } : {}),
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      group: opts.group,
      names: {
        kind: opts.kind,
        listKind: opts.listKind ?? `${opts.kind}List`,
        plural: opts.plural,
        singular: opts.singular ?? opts.kind.toLowerCase(),
        ...(opts.shortNames?.length ? { shortNames: opts.shortNames } : {}),
        ...(opts.categories?.length ? { categories: opts.categories } : {}),
      },
      scope: opts.scope,
      versions: opts.versions.map((v) => ({
        name: v.name,
        served: v.served ?? true,
        storage: v === storage[0],
        ...(v.deprecated ? { deprecated: true } : {}),
        ...(v.deprecationWarning ? { deprecationWarning: v.deprecationWarning } : {}),
        schema: { openAPIV3Schema: resourceSchema(v.schema) },
        ...(v.subresources && (v.subresources.status || v.subresources.scale)
          ? {
              subresources: {
                ...(v.subresources.status ? { status: {} } : {}),
                ...(v.subresources.scale ? { scale: v.subresources.scale } : {}),
              },
            }
          : {}),
        ...(v.additionalPrinterColumns?.length ? { additionalPrinterColumns: v.additionalPrinterColumns } : {}),
      })),
    },
  };
}

/** YAML text of a CRD as checked in under `infra/crds/`, with a header naming its source. */
export function crdToYaml(crd: CustomResourceDefinition, source: string): string {
  const header = `# Generated by api/generate-crds.ts from ${source}. Do not edit: change the zod schema and run \`npm run crds\`.\n`;
  return header + stringify(crd, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** The root schema of a resource: the API server owns `apiVersion`, `kind` and `metadata`. */
function resourceSchema(schema: z.ZodType): JSONSchemaProps {
  const root = toStructuralSchema(schema);
  if (root.type !== 'object' || !root.properties) throw new SchemaConversionError('', 'a resource schema must be an object');
  const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = root.properties;
  const required = (root.required ?? []).filter((r) => !['apiVersion', 'kind', 'metadata'].includes(r));
  const result: JSONSchemaProps = {
    ...root,
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
      kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
      metadata: { type: 'object' },
      ...rest,
    },
  };
  if (required.length) result.required = required;
  else delete result.required;
  return result;
}

/** Converts a zod schema to a structural OpenAPI v3 schema. */
export function toStructuralSchema(schema: z.ZodType): JSONSchemaProps {
  const js = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' }) as JsonObject;
  return jsonSchemaToStructural(js);
}

type JsonObject = Record<string, unknown>;

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const PASS_THROUGH = [
  'description',
  'title',
  'format',
  'default',
  'nullable',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'example',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
] as const;
/** Keys that carry no meaning for the API server (or are handled elsewhere) and are dropped. */
const IGNORED = new Set(['$schema', '$id', 'id', '$defs', 'definitions', 'examples', 'readOnly', 'writeOnly', '$comment']);

/**
 * A zod schema whose `.meta()` carries this key (the name of a Kubernetes schema, e.g.
 * `io.k8s.api.core.v1.PodSpec`) is emitted as that schema, generated from the committed snapshot of the
 * API server's OpenAPI document (`api/openapi/`), instead of from the zod schema: the zod schema checks
 * what the controller relies on, the CRD gets the whole upstream schema.
 */
export const KUBERNETES_SCHEMA_KEY = 'x-ripple-kubernetes-schema';
const HANDLED = new Set(['type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'anyOf', 'oneOf', 'allOf', '$ref']);

/** Converts JSON Schema (as zod emits it for OpenAPI 3.0) to a structural schema. */
export function jsonSchemaToStructural(root: JsonObject): JSONSchemaProps {
  return ordered(convert(root, root, '', []));
}

/** Conventional key order (as controller-gen writes it), so the generated YAML reads naturally. */
const KEY_ORDER = ['description', 'type', 'format', 'default', 'enum', 'nullable', 'anyOf', 'x-kubernetes-int-or-string'];

function ordered(node: JSONSchemaProps): JSONSchemaProps {
  const rank = (k: string) => {
    const i = KEY_ORDER.indexOf(k);
    if (i >= 0) return i;
    if (k === 'properties' || k === 'items' || k === 'additionalProperties') return 90;
    if (k === 'required') return 91;
    return k.startsWith('x-kubernetes-') ? 92 : 50;
  };
  const out: JsonObject = {};
  for (const key of Object.keys(node).sort((a, b) => rank(a) - rank(b))) {
    const value = (node as JsonObject)[key];
    if (key === 'properties' && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, ordered(v as JSONSchemaProps)]));
    } else if ((key === 'items' || key === 'additionalProperties') && isObject(value)) {
      out[key] = ordered(value as JSONSchemaProps);
    } else out[key] = value;
  }
  return out as JSONSchemaProps;
}

function convert(node: JsonObject, root: JsonObject, path: string, outerRefs: string[]): JSONSchemaProps {
  let refs: string[];
  [node, refs] = inlineRefs(node, root, path, outerRefs);
  node = mergeAllOf(node, root, path, refs);

  const kubernetes = node[KUBERNETES_SCHEMA_KEY];
  if (typeof kubernetes === 'string') {
    const description = typeof node.description === 'string' ? { description: node.description } : {};
    return { ...embeddedKubernetesSchema(kubernetes), ...description };
  }

  for (const key of Object.keys(node)) {
    if (!IGNORED.has(key) && !HANDLED.has(key) && !(PASS_THROUGH as readonly string[]).includes(key)) {
      throw new SchemaConversionError(path, `JSON Schema keyword "${key}" has no structural equivalent`);
    }
  }
  if (node.uniqueItems === true) throw new SchemaConversionError(path, 'uniqueItems is not allowed; use x-kubernetes-list-type: set');

  const out: JSONSchemaProps = {};
  for (const key of PASS_THROUGH) {
    if (node[key] !== undefined) (out as JsonObject)[key] = node[key];
  }

  const union = (node.anyOf ?? node.oneOf) as JsonObject[] | undefined;
  if (union) return convertUnion(node, union, out, root, path, refs);

  const type = node.type as string | undefined;
  if (type === undefined) {
    if (node.enum || node.const !== undefined) return { ...out, ...enumOf(node, path) };
    // No type at all: every JSON value is allowed (zod's unknown, e.g. an opaque plugin config).
    return { ...out, 'x-kubernetes-preserve-unknown-fields': true };
  }
  if (Array.isArray(type)) throw new SchemaConversionError(path, 'multiple types are not structural');

  switch (type) {
    case 'object':
      return convertObject(node, out, root, path, refs);
    case 'array': {
      const items = node.items;
      if (!items || Array.isArray(items) || typeof items !== 'object') {
        throw new SchemaConversionError(path, 'arrays need a single items schema (tuples are not structural)');
      }
      return { ...out, type: 'array', items: convert(items as JsonObject, root, `${path}[]`, refs) };
    }
    case 'integer':
      return { ...normalizeIntegerBounds(out), type: 'integer', ...enumIfAny(node, path) };
    case 'number':
    case 'string':
    case 'boolean':
      return { ...out, type, ...enumIfAny(node, path) };
    case 'null':
      throw new SchemaConversionError(path, 'a null-only schema is not structural');
    default:
      throw new SchemaConversionError(path, `unknown type "${type}"`);
  }
}

function convertObject(node: JsonObject, out: JSONSchemaProps, root: JsonObject, path: string, refs: string[]): JSONSchemaProps {
  const result: JSONSchemaProps = { ...out, type: 'object' };
  const props = node.properties as Record<string, JsonObject> | undefined;
  if (props && Object.keys(props).length > 0) {
    result.properties = {};
    for (const [name, child] of Object.entries(props)) {
      result.properties[name] = convert(child, root, path ? `${path}.${name}` : name, refs);
    }
    const required = (node.required as string[] | undefined)?.filter((r) => r in props);
    if (required?.length) result.required = required;
  }
  const extra = node.additionalProperties;
  if (extra === true || (isObject(extra) && Object.keys(extra).length === 0)) {
    // A loose object (zod's looseObject/passthrough): keep what we do not model.
    result['x-kubernetes-preserve-unknown-fields'] = true;
  } else if (isObject(extra)) {
    if (result.properties) {
      // Structural schemas forbid properties beside additionalProperties; keep the unknown ones unvalidated.
      result['x-kubernetes-preserve-unknown-fields'] = true;
    } else {
      result.additionalProperties = convert(extra, root, `${path}.*`, refs);
    }
  }
  // additionalProperties: false is dropped: the API server prunes unknown fields anyway.
  return result;
}

function convertUnion(
  node: JsonObject,
  branches: JsonObject[],
  out: JSONSchemaProps,
  root: JsonObject,
  path: string,
  refs: string[],
): JSONSchemaProps {
  const resolved = branches.map((b) => mergeAllOf(inlineRefs(b, root, path, refs)[0], root, path, refs));
  const types = new Set(resolved.map((b) => (b.enum || b.const !== undefined) && !b.type ? 'string' : (b.type as string)));
  const nullable = types.delete('null') || undefined;
  const base: JSONSchemaProps = { ...out, ...(nullable ? { nullable: true } : {}) };

  if (node['x-kubernetes-int-or-string'] === true || (types.size === 2 && types.has('string') && (types.has('integer') || types.has('number')))) {
    return {
      ...base,
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string' }],
    };
  }
  const live = resolved.filter((b) => b.type !== 'null');
  if (types.size === 1 && live.every((b) => b.enum || b.const !== undefined)) {
    const values = live.flatMap((b) => enumOf(b, path).enum ?? []);
    return { ...base, type: [...types][0] as JSONSchemaProps['type'], enum: [...new Set(values)] };
  }
  if (types.size === 1 && live.length === 1) {
    return { ...convert(live[0] as JsonObject, root, path, refs), ...base };
  }
  if (types.size === 1 && types.has('object')) {
    // Object unions become one object with every branch's properties; a field is required only when
    // every branch requires it. The branch-specific rules are lost, so express them with CEL.
    const merged: JsonObject = { type: 'object', properties: {} };
    const required = live.map((b) => new Set((b.required as string[] | undefined) ?? []));
    for (const b of live) Object.assign(merged.properties as JsonObject, b.properties ?? {});
    merged.required = [...(required[0] ?? [])].filter((r) => required.every((s) => s.has(r)));
    if (live.some((b) => b.additionalProperties !== undefined && b.additionalProperties !== false)) merged.additionalProperties = {};
    return { ...convert(merged, root, path, refs), ...base };
  }
  throw new SchemaConversionError(path, `a union of ${[...types].join(', ')} is not structural (only int-or-string, enums and object unions are)`);
}

/** The node with its `$ref` chain resolved, and the references followed to get there (cycle check). */
function inlineRefs(node: JsonObject, root: JsonObject, path: string, refs: string[]): [JsonObject, string[]] {
  let current = node;
  while (typeof current.$ref === 'string') {
    const ref = current.$ref;
    if (refs.includes(ref)) throw new SchemaConversionError(path, `recursive schema (${ref}) cannot be inlined`);
    refs = [...refs, ref];
    const target = resolvePointer(root, ref, path);
    const { $ref: _ref, ...rest } = current;
    current = { ...target, ...rest };
  }
  return [current, refs];
}

function mergeAllOf(node: JsonObject, root: JsonObject, path: string, refs: string[]): JsonObject {
  const all = node.allOf as JsonObject[] | undefined;
  if (!all) return node;
  const { allOf: _all, ...rest } = node;
  let merged: JsonObject = {};
  for (const part of all) {
    const p = mergeAllOf(inlineRefs(part, root, path, refs)[0], root, path, refs);
    merged = {
      ...merged,
      ...p,
      ...(merged.properties || p.properties ? { properties: { ...(merged.properties as object), ...(p.properties as object) } } : {}),
      ...(merged.required || p.required
        ? { required: [...new Set([...((merged.required as string[]) ?? []), ...((p.required as string[]) ?? [])])] }
        : {}),
    };
  }
  return { ...merged, ...rest };
}

function resolvePointer(root: JsonObject, ref: string, path: string): JsonObject {
  if (!ref.startsWith('#')) throw new SchemaConversionError(path, `external reference ${ref} cannot be inlined`);
  let target: unknown = root;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    target = isObject(target) ? target[key] : undefined;
  }
  if (!isObject(target)) throw new SchemaConversionError(path, `reference ${ref} does not resolve`);
  return target;
}

function enumOf(node: JsonObject, path: string): JSONSchemaProps {
  const values = node.enum !== undefined ? (node.enum as unknown[]) : [node.const];
  if (!values.every((v) => ['string', 'number', 'boolean'].includes(typeof v))) {
    throw new SchemaConversionError(path, 'only scalar enums are supported');
  }
  const kinds = new Set(values.map((v) => typeof v));
  if (kinds.size !== 1) throw new SchemaConversionError(path, 'an enum must have values of one type');
  const kind = [...kinds][0];
  const type: JSONSchemaProps['type'] =
    kind === 'string' ? 'string' : kind === 'boolean' ? 'boolean' : values.every((v) => Number.isInteger(v)) ? 'integer' : 'number';
  return { type, enum: values };
}

function enumIfAny(node: JsonObject, path: string): JSONSchemaProps {
  if (node.enum === undefined && node.const === undefined) return {};
  const { enum: values } = enumOf(node, path);
  return { enum: values };
}

/** zod writes the range of the JavaScript number it checks; the API server wants `format` instead. */
function normalizeIntegerBounds(out: JSONSchemaProps): JSONSchemaProps {
  const result = { ...out };
  if (result.maximum === Number.MAX_SAFE_INTEGER) delete result.maximum;
  if (result.minimum === Number.MIN_SAFE_INTEGER) delete result.minimum;
  if (result.maximum === INT32_MAX) {
    delete result.maximum;
    result.format ??= 'int32';
  }
  if (result.minimum === INT32_MIN) delete result.minimum;
  if (result.format === 'safeint') delete result.format;
  return result;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
