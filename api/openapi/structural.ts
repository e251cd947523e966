/**
 * Turns a schema of Kubernetes' own OpenAPI v3 document (the committed snapshot, `snapshot.ts`) into a
 * structural CRD schema that can be embedded in a custom resource, e.g. a pod template's `spec`.
 *
 * The API server's document is close but not structural, and some of what it says must not reach a CRD:
 * - `$ref` / `allOf: [{$ref}]` are inlined (the PodSpec's closure has no recursion; a cycle throws);
 * - `IntOrString` (`format: int-or-string`, a oneOf) and `Quantity` (a oneOf of string and number) become
 *   `x-kubernetes-int-or-string`; a quantity also gets a pattern, so `cpu: 2x` is refused at apply time;
 * - `default` goes, except on the keys of an `x-kubernetes-list-type: map` that are not required (the API
 *   server requires those to have one, e.g. a port's `protocol: TCP`): a built-in's defaults are applied
 *   when the pod is created, and defaults in the CRD would be written into every stored template;
 * - `enum` goes: the values a newer Kubernetes accepts (a cluster newer than the snapshot) must not be
 *   refused by an older snapshot; the pod is still validated by the API server when it is created;
 * - `ObjectMeta` (an ephemeral volume's claim template) keeps only `labels` and `annotations`, the only
 *   fields a pod may set there;
 * - strategic-merge-patch and union hints go; list and map types (`x-kubernetes-list-type`,
 *   `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`) stay, so server-side apply merges containers,
 *   env vars and ports by key as it does in a Deployment.
 * Descriptions are kept, cut, or dropped (`descriptions`), to stay inside the CRD size limits.
 */
import type { JSONSchemaProps } from '../crd.js';

type Json = Record<string, unknown>;

export type DescriptionMode = 'full' | 'first-sentence' | 'none';

export interface StructuralOptions {
  descriptions: DescriptionMode;
}

export class OpenApiConversionError extends Error {
  override readonly name = 'OpenApiConversionError';
  constructor(path: string, problem: string) {
    super(`${path || '<root>'}: ${problem}`);
  }
}

const INT_OR_STRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

/**
 * A resource quantity as `resource.ParseQuantity` accepts it: a signed decimal number, then a binary
 * suffix (Ki…Ei), a decimal suffix (n, u, m, k, M, G, T, P, E) or a decimal exponent (e3, E-2).
 */
export const QUANTITY_PATTERN = '^[+-]?(\\d+(\\.\\d*)?|\\.\\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?(\\d+(\\.\\d*)?|\\.\\d+))?$';

/** Formats the CRD validator knows; others (none in the core group today) are dropped rather than warned about. */
const KNOWN_FORMATS = new Set(['int32', 'int64', 'float', 'double', 'byte', 'date-time', 'date', 'duration']);

/** Keys that carry nothing a CRD can use. */
const DROPPED = new Set([
  'x-kubernetes-patch-merge-key',
  'x-kubernetes-patch-strategy',
  'x-kubernetes-unions',
  'x-kubernetes-group-version-kind',
  'enum',
  'default',
]);
const HANDLED = new Set(['description', 'type', 'format', 'properties', 'required', 'items', 'additionalProperties', 'allOf', '$ref', 'oneOf']);
const KEPT = ['x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type'] as const;

/** The structural schema of `name` from `schemas` (the snapshot's component schemas). */
export function structuralFromOpenApi(schemas: Record<string, Json>, name: string, opts: StructuralOptions): JSONSchemaProps {
  const target = schemas[name];
  if (!target) throw new OpenApiConversionError(name, 'not in the snapshot');
  return new Converter(schemas, opts).named(name, target, name, []);
}

class Converter {
  constructor(
    private readonly schemas: Record<string, Json>,
    private readonly opts: StructuralOptions,
  ) {}

  /** A component schema by name; a few are replaced by what a CRD needs instead. */
  named(name: string, node: Json, path: string, stack: string[]): JSONSchemaProps {
    if (stack.includes(name)) throw new OpenApiConversionError(path, `recursive schema ${name} cannot be inlined`);
    const description = this.describe(node.description);
    if (name === INT_OR_STRING) return { ...description, 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] };
    if (name === QUANTITY) {
      return { ...description, 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }], pattern: QUANTITY_PATTERN };
    }
    if (name === OBJECT_META) {
      const map: JSONSchemaProps = { type: 'object', additionalProperties: { type: 'string' } };
      return { ...description, type: 'object', properties: { labels: map, annotations: map } };
    }
    return this.node(node, path, [...stack, name]);
  }

  node(raw: Json, path: string, stack: string[]): JSONSchemaProps {
    // `allOf: [{$ref}]` is how the v3 document attaches a description or default to a reference.
    const ref = refOf(raw, path);
    if (ref !== undefined) {
      const target = this.schemas[ref];
      if (!target) throw new OpenApiConversionError(path, `reference ${ref} is not in the snapshot`);
      const inner = this.named(ref, target, path, stack);
      // The referring node's own description is the more specific one (e.g. "Resources of this container").
      const description = this.describe(raw.description);
      return { ...inner, ...description };
    }
    for (const key of Object.keys(raw)) {
      if (!HANDLED.has(key) && !DROPPED.has(key) && !(KEPT as readonly string[]).includes(key)) {
        throw new OpenApiConversionError(path, `OpenAPI keyword "${key}" is not handled`);
      }
    }
    if (raw.oneOf !== undefined || raw.format === 'int-or-string') {
      if (raw.format === 'int-or-string') return { ...this.describe(raw.description), 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] };
      throw new OpenApiConversionError(path, 'a oneOf other than IntOrString or Quantity is not structural');
    }
    const out: JSONSchemaProps = { ...this.describe(raw.description) };
    const type = raw.type;
    if (typeof type !== 'string') throw new OpenApiConversionError(path, 'no type');
    switch (type) {
      case 'object':
        return this.object(raw, out, path, stack);
      case 'array':
        return this.array(raw, out, path, stack);
      case 'string':
      case 'integer':
      case 'number':
      case 'boolean':
        out.type = type;
        if (typeof raw.format === 'string' && KNOWN_FORMATS.has(raw.format)) out.format = raw.format;
        return out;
      default:
        throw new OpenApiConversionError(path, `unknown type "${String(type)}"`);
    }
  }

  private object(raw: Json, out: JSONSchemaProps, path: string, stack: string[]): JSONSchemaProps {
    out.type = 'object';
    const props = raw.properties as Record<string, Json> | undefined;
    if (props) {
      out.properties = {};
      for (const [key, child] of Object.entries(props)) out.properties[key] = this.node(child, `${path}.${key}`, stack);
    }
    if (isObject(raw.additionalProperties)) {
      if (props) throw new OpenApiConversionError(path, 'properties beside additionalProperties are not structural');
      out.additionalProperties = this.node(raw.additionalProperties, `${path}.*`, stack);
    }
    if (!props && !isObject(raw.additionalProperties)) {
      // An object the document says nothing about would prune everything written in it.
      throw new OpenApiConversionError(path, 'an object without properties or additionalProperties would drop its content');
    }
    const required = raw.required as string[] | undefined;
    if (required?.length) out.required = [...required];
    if (typeof raw['x-kubernetes-map-type'] === 'string') out['x-kubernetes-map-type'] = raw['x-kubernetes-map-type'] as 'atomic' | 'granular';
    return out;
  }

  private array(raw: Json, out: JSONSchemaProps, path: string, stack: string[]): JSONSchemaProps {
    out.type = 'array';
    if (!isObject(raw.items)) throw new OpenApiConversionError(path, 'an array needs one items schema');
    const items = this.node(raw.items, `${path}[]`, stack);
    const listType = raw['x-kubernetes-list-type'];
    if (listType === 'atomic' || listType === 'set' || listType === 'map') out['x-kubernetes-list-type'] = listType;
    if (listType === 'map') {
      const keys = raw['x-kubernetes-list-map-keys'];
      if (!Array.isArray(keys) || keys.length === 0) throw new OpenApiConversionError(path, 'a map list needs its keys');
      out['x-kubernetes-list-map-keys'] = keys.map(String);
      // The API server requires every key to be required or defaulted: take the built-in's default.
      const itemRaw = this.itemTarget(raw.items);
      for (const key of keys.map(String)) {
        const prop = items.properties?.[key];
        if (!prop) throw new OpenApiConversionError(path, `map key ${key} is not a property of the items`);
        if (items.required?.includes(key)) continue;
        const fallback = (itemRaw.properties as Record<string, Json> | undefined)?.[key]?.default;
        if (fallback === undefined) throw new OpenApiConversionError(`${path}[].${key}`, 'a map key that is neither required nor defaulted');
        prop.default = fallback;
      }
    }
    out.items = items;
    return out;
  }

  /** The component an items schema refers to (or itself), to read the defaults of its raw properties. */
  private itemTarget(items: Json): Json {
    const ref = refOf(items, '');
    return ref !== undefined ? (this.schemas[ref] ?? items) : items;
  }

  private describe(text: unknown): JSONSchemaProps {
    if (typeof text !== 'string' || text === '' || this.opts.descriptions === 'none') return {};
    if (this.opts.descriptions === 'full') return { description: text };
    return { description: firstSentence(text) };
  }
}

/** The first sentence of a description (the API reference's summary line), without its "More info" links. */
export function firstSentence(text: string): string {
  const paragraph = text.split('\n\n')[0] ?? text;
  const m = /^(.*?[.!?])(\s|$)/s.exec(paragraph);
  return (m?.[1] ?? paragraph).replace(/\s+/g, ' ').trim();
}

/** The component name a node refers to, through `$ref` or a one-element `allOf`. */
function refOf(node: Json, path: string): string | undefined {
  if (typeof node.$ref === 'string') return componentName(node.$ref, path);
  const all = node.allOf;
  if (all === undefined) return undefined;
  if (!Array.isArray(all) || all.length !== 1 || !isObject(all[0]) || typeof all[0].$ref !== 'string') {
    throw new OpenApiConversionError(path, 'only a single-reference allOf is handled');
  }
  return componentName(all[0].$ref, path);
}

function componentName(ref: string, path: string): string {
  const prefix = '#/components/schemas/';
  if (!ref.startsWith(prefix)) throw new OpenApiConversionError(path, `reference ${ref} is not a component schema`);
  return ref.slice(prefix.length);
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
