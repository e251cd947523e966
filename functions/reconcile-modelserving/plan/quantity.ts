/**
 * Kubernetes resource quantities ("500m", "4Gi", "1e3"), exact: values are held as BigInt nano-units
 * so sums for a PodGroup's minResources never drift, and so templates that say `cpu: 1` and
 * `cpu: "1000m"` compare equal when revisions are matched.
 */

const NANO = 1_000_000_000n;
const DECIMAL: Record<string, bigint> = {
  n: 1n,
  u: 1_000n,
  m: 1_000_000n,
  '': NANO,
  k: NANO * 1_000n,
  M: NANO * 1_000_000n,
  G: NANO * 1_000_000_000n,
  T: NANO * 1_000_000_000_000n,
  P: NANO * 1_000_000_000_000_000n,
  E: NANO * 1_000_000_000_000_000_000n,
};
const BINARY: Record<string, bigint> = {
  Ki: NANO << 10n,
  Mi: NANO << 20n,
  Gi: NANO << 30n,
  Ti: NANO << 40n,
  Pi: NANO << 50n,
  Ei: NANO << 60n,
};

/** Nano-units of a quantity (rounded up below one nano-unit, as the API server does), or undefined. */
export function parseQuantity(value: unknown): bigint | undefined {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : undefined;
  if (text === undefined) return undefined;
  const m = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return undefined;
  const [, sign, num = '0', suffix, exp] = m;
  const [whole = '0', frac = ''] = num.split('.');
  const digits = BigInt((whole || '0') + frac);
  let numerator = digits;
  let denominator = 10n ** BigInt(frac.length);
  if (suffix && suffix in BINARY) numerator *= BINARY[suffix] as bigint;
  else if (suffix) numerator *= DECIMAL[suffix] as bigint;
  else {
    numerator *= NANO;
    const e = exp ? Number(exp) : 0;
    if (Math.abs(e) > 40) return undefined;
    if (e >= 0) numerator *= 10n ** BigInt(e);
    else denominator *= 10n ** BigInt(-e);
  }
  const nanos = (numerator + denominator - 1n) / denominator;
  return sign === '-' ? -nanos : nanos;
}

/** A canonical text for nano-units: whole units when exact, otherwise milli-, micro- or nano-units. */
export function formatQuantity(nanos: bigint): string {
  const neg = nanos < 0n;
  const abs = neg ? -nanos : nanos;
  const sign = neg ? '-' : '';
  if (abs % NANO === 0n) return `${sign}${abs / NANO}`;
  if (abs % 1_000_000n === 0n) return `${sign}${abs / 1_000_000n}m`;
  if (abs % 1_000n === 0n) return `${sign}${abs / 1_000n}u`;
  return `${sign}${abs}n`;
}

/** The canonical text of a quantity, or the input unchanged when it does not parse. */
export function canonicalQuantity(value: unknown): unknown {
  const nanos = parseQuantity(value);
  return nanos === undefined ? value : formatQuantity(nanos);
}
