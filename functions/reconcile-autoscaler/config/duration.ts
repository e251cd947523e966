/**
 * Durations as WVA's ConfigMaps write them: Go's `time.ParseDuration` syntax ("60s", "1m30s", "1.5h",
 * "250ms"), and Prometheus range selectors for queries.
 */

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3, // U+00B5
  'μs': 1e-3, // U+03BC
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

const COMPONENT = /(\d*)(?:\.(\d*))?([a-zµμ]+)/y;

/** Milliseconds for a Go duration string, or undefined when it is not one. */
export function parseGoDuration(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s.startsWith('-')) sign = -1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') return undefined;
  let total = 0;
  COMPONENT.lastIndex = 0;
  while (COMPONENT.lastIndex < s.length) {
    const start = COMPONENT.lastIndex;
    const m = COMPONENT.exec(s);
    if (!m || m.index !== start) return undefined;
    const [, whole = '', frac, unit = ''] = m;
    if (whole === '' && (frac === undefined || frac === '')) return undefined;
    const perUnit = UNIT_MS[unit];
    if (perUnit === undefined) return undefined;
    total += Number(`${whole === '' ? '0' : whole}.${frac ?? '0'}`) * perUnit;
  }
  return sign * total;
}

/**
 * A Prometheus range duration ("10m", "1h30m", "90s" → "1m30s"). Prometheus has no sub-millisecond
 * unit, so the value is rounded to whole milliseconds and never below 1ms.
 */
export function formatPrometheusDuration(ms: number): string {
  let rest = Math.max(1, Math.round(ms));
  const parts: string[] = [];
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1_000], ['ms', 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) {
      parts.push(`${n}${unit}`);
      rest -= n * size;
    }
  }
  return parts.join('');
}
