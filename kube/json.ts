/**
 * The small JSON helpers every layer needs at its boundaries (API objects, Redis records), in one
 * place so they cannot drift apart.
 */

/** The value as a plain object, or undefined for arrays, null and scalars. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * JSON text parsed, or undefined when it is not JSON. For records read back from Redis or an
 * annotation, where unreadable means "absent" and the caller's zod schema decides the rest.
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * JSON with the keys of every object sorted, so two values that differ only in key order (the API
 * server's order versus ours, a hash read back from Redis) compare equal as text. Array order counts;
 * `undefined` members are left out, as JSON.stringify leaves them out.
 */
export function sortedJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) => {
      const record = asRecord(v);
      if (record === undefined) return v;
      return Object.fromEntries(
        Object.keys(record)
          .sort()
          .map((k) => [k, record[k]]),
      );
    }) ?? 'undefined'
  );
}
