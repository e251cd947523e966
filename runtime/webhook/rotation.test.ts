import { describe, expect, it } from 'vitest';
import { needsRenewal } from './rotation.js';

describe('needsRenewal', () => {
  const notAfter = new Date('2026-01-31T00:00:00Z');
  it('renews once less than the fraction of the validity is left', () => {
    expect(needsRenewal(notAfter, 30, 0.3, new Date('2026-01-20T00:00:00Z'))).toBe(false); // 11 days left of 30
    expect(needsRenewal(notAfter, 30, 0.3, new Date('2026-01-23T00:00:00Z'))).toBe(true); // 8 days left < 9
    expect(needsRenewal(notAfter, 30, 0.3, new Date('2026-02-01T00:00:00Z'))).toBe(true); // expired
  });
});
