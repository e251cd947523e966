import { describe, expect, it } from 'vitest';
import { canonicalQuantity, formatQuantity, parseQuantity } from './quantity.js';

describe('quantities', () => {
  it('parses decimal, binary and exponent forms exactly', () => {
    expect(parseQuantity('1')).toBe(1_000_000_000n);
    expect(parseQuantity(1)).toBe(1_000_000_000n);
    expect(parseQuantity('500m')).toBe(500_000_000n);
    expect(parseQuantity('1.5')).toBe(1_500_000_000n);
    expect(parseQuantity('1Ki')).toBe(1024n * 1_000_000_000n);
    expect(parseQuantity('4Gi')).toBe(4n * 1024n ** 3n * 1_000_000_000n);
    expect(parseQuantity('1e3')).toBe(1000n * 1_000_000_000n);
    expect(parseQuantity('1E3')).toBe(1000n * 1_000_000_000n);
    expect(parseQuantity('2E')).toBe(2n * 10n ** 18n * 1_000_000_000n);
    expect(parseQuantity('abc')).toBeUndefined();
    expect(parseQuantity({})).toBeUndefined();
  });

  it('writes a canonical form, so equal amounts compare equal', () => {
    expect(canonicalQuantity('1000m')).toBe('1');
    expect(canonicalQuantity(1)).toBe('1');
    expect(canonicalQuantity('0.5')).toBe('500m');
    expect(canonicalQuantity('1Ki')).toBe('1024');
    expect(formatQuantity(1500n)).toBe('1500n');
    expect(formatQuantity(-2_000_000n)).toBe('-2m');
    expect(canonicalQuantity('weird')).toBe('weird');
  });
});
