import { z } from 'zod';
import { AVAILABLE_CONDITIONS_ANNOTATION } from './keys.js';

/**
 * `pod.kusionstack.io/available-conditions`: which protection finalizers must be on the Pod before it may be
 * declared available again. Written by cooperation controllers (or their Pod-create webhook), read here.
 * Unknown fields are kept so a newer writer's data survives our rewrite.
 */
export const AvailableConditionsSchema = z.looseObject({
  expectedFinalizers: z.record(z.string(), z.string()).optional(),
});
export type AvailableConditions = z.infer<typeof AvailableConditionsSchema>;

export type ParsedAvailableConditions =
  | { ok: true; value: AvailableConditions | undefined }
  | { ok: false; error: string };

export function parseAvailableConditions(annotations: Readonly<Record<string, string>>): ParsedAvailableConditions {
  const raw = annotations[AVAILABLE_CONDITIONS_ANNOTATION];
  if (raw === undefined) return { ok: true, value: undefined };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    return { ok: false, error: `${AVAILABLE_CONDITIONS_ANNOTATION} is not JSON: ${(err as Error).message}` };
  }
  // Go's json.Unmarshal of "null" leaves the struct empty; accept it the same way.
  if (json === null) return { ok: true, value: {} };
  const parsed = AvailableConditionsSchema.safeParse(json);
  if (!parsed.success) return { ok: false, error: `${AVAILABLE_CONDITIONS_ANNOTATION} is malformed: ${parsed.error.message}` };
  return { ok: true, value: parsed.data };
}

/** Go's encoding/json sorts map keys; so do we, so an unchanged map never looks changed. */
export function serializeAvailableConditions(value: AvailableConditions): string {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) {
    const v = value[k];
    if (k === 'expectedFinalizers') {
      const ef = v as Record<string, string> | undefined;
      if (ef === undefined || Object.keys(ef).length === 0) continue; // omitempty
      out[k] = Object.fromEntries(Object.keys(ef).sort().map((key) => [key, ef[key]]));
    } else {
      out[k] = v;
    }
  }
  return JSON.stringify(out);
}

export interface ExpectedFinalizer {
  /** `<Kind>/<namespace>/<name>` of the employer (Service, …) that expects it. */
  key: string;
  finalizer: string;
}

export interface ExpectationStatus {
  /** false when the annotation does not parse: callers must then not treat the Pod as available. */
  readable: boolean;
  error?: string;
  /** Expected finalizers not present in metadata.finalizers, sorted by key. */
  unsatisfied: ExpectedFinalizer[];
}

export function expectationStatus(pod: {
  annotations: Readonly<Record<string, string>>;
  finalizers: readonly string[];
}): ExpectationStatus {
  const parsed = parseAvailableConditions(pod.annotations);
  if (!parsed.ok) return { readable: false, error: parsed.error, unsatisfied: [] };
  const have = new Set(pod.finalizers);
  const expected = parsed.value?.expectedFinalizers ?? {};
  const unsatisfied = Object.keys(expected)
    .sort()
    .map((key) => ({ key, finalizer: expected[key] as string }))
    .filter((e) => !have.has(e.finalizer));
  return { readable: true, unsatisfied };
}

/**
 * Every expected finalizer is on the Pod (true when there is no annotation), ignoring keys the caller found
 * stale. An unreadable annotation is never satisfied.
 */
export function expectedFinalizersSatisfied(
  pod: { annotations: Readonly<Record<string, string>>; finalizers: readonly string[] },
  staleKeys: ReadonlySet<string> = new Set(),
): boolean {
  const s = expectationStatus(pod);
  return s.readable && s.unsatisfied.every((e) => staleKeys.has(e.key));
}

export function expectationKey(employer: { kind: string; namespace: string; name: string }): string {
  return `${employer.kind}/${employer.namespace}/${employer.name}`;
}

/** The Service an expectation key names, if it names one; only those can be checked for staleness. */
export function serviceOfExpectationKey(key: string): { namespace: string; name: string } | undefined {
  const parts = key.split('/');
  if (parts.length !== 3 || parts[0] !== 'Service') return undefined;
  return { namespace: parts[1] as string, name: parts[2] as string };
}

/**
 * An expectation on a Service is stale when the Service is gone, or its selector no longer matches the Pod:
 * that cooperation controller will never add its finalizer again. `service` is undefined when not found.
 * A Service without a selector selects nothing by itself, but kuperator treats an empty selector as matching
 * everything, so it is never stale on that ground.
 */
export function isServiceExpectationStale(
  service: { selector?: Readonly<Record<string, string>> } | undefined,
  podLabels: Readonly<Record<string, string>>,
): boolean {
  if (service === undefined) return true;
  const selector = service.selector ?? {};
  return Object.entries(selector).some(([k, v]) => podLabels[k] !== v);
}

/** The annotation value with `keys` removed, or undefined when nothing changes or it cannot be read. */
export function withoutExpectations(
  annotations: Readonly<Record<string, string>>,
  keys: Iterable<string>,
): string | undefined {
  const parsed = parseAvailableConditions(annotations);
  if (!parsed.ok || parsed.value === undefined) return undefined;
  const ef = { ...(parsed.value.expectedFinalizers ?? {}) };
  let changed = false;
  for (const k of keys) {
    if (k in ef) {
      delete ef[k];
      changed = true;
    }
  }
  if (!changed) return undefined;
  return serializeAvailableConditions({ ...parsed.value, expectedFinalizers: ef });
}

/** The annotation value with `key → finalizer` recorded, or undefined when already so. Throws when unreadable. */
export function withExpectation(annotations: Readonly<Record<string, string>>, expected: ExpectedFinalizer): string | undefined {
  const parsed = parseAvailableConditions(annotations);
  if (!parsed.ok) throw new Error(parsed.error);
  const current = parsed.value ?? {};
  const ef = { ...(current.expectedFinalizers ?? {}) };
  if (ef[expected.key] === expected.finalizer) return undefined;
  ef[expected.key] = expected.finalizer;
  return serializeAvailableConditions({ ...current, expectedFinalizers: ef });
}
