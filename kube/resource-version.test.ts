import { describe, expect, it } from 'vitest';
import { isAtLeast, isKnownNewer, isNewer } from './resource-version.js';

describe('resourceVersion order', () => {
  it('compares resourceVersions as integers, and never assumes one that is not a number is older', () => {
    expect(isNewer('100', '99')).toBe(true);
    expect(isNewer('99', '100')).toBe(false);
    expect(isNewer('100', '100')).toBe(false);
    expect(isNewer('12345678901234567890', '12345678901234567889')).toBe(true);
    expect(isNewer('abc', '100')).toBe(true);
    expect(isNewer('100', 'abc')).toBe(true);
  });

  it('an opaque resourceVersion equal to the other is not newer', () => {
    expect(isNewer('abc', 'abc')).toBe(false);
  });
});

describe('resourceVersion order, for trusting a cache', () => {
  it('is newer only when both are revisions and the first is larger', () => {
    expect(isKnownNewer('100', '99')).toBe(true);
    expect(isKnownNewer('99', '100')).toBe(false);
    expect(isKnownNewer('100', '100')).toBe(false);
    expect(isKnownNewer('abc', '100')).toBe(false);
    expect(isKnownNewer('100', 'abc')).toBe(false);
  });

  it('is at least the other when equal (opaque too) or known newer', () => {
    expect(isAtLeast('100', '100')).toBe(true);
    expect(isAtLeast('abc', 'abc')).toBe(true);
    expect(isAtLeast('101', '100')).toBe(true);
    expect(isAtLeast('99', '100')).toBe(false);
    expect(isAtLeast('abc', 'abd')).toBe(false);
  });
});
