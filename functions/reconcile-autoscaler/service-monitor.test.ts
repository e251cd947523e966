import { describe, expect, it } from 'vitest';
import { serviceMonitorGoing } from './service-monitor.js';

describe('serviceMonitorGoing', () => {
  it('gone, or the same object being deleted: going', () => {
    expect(serviceMonitorGoing('u1', undefined)).toBe(true);
    expect(serviceMonitorGoing('u1', { uid: 'u1', deletionTimestamp: '2026-01-01T00:00:00Z' })).toBe(true);
    expect(serviceMonitorGoing('unknown', { uid: 'u9', deletionTimestamp: '2026-01-01T00:00:00Z' })).toBe(true);
  });

  it('issue 14 scenario 10: replaced by a new object (another uid) is not going, nor is the same one alive', () => {
    expect(serviceMonitorGoing('u1', { uid: 'u2' })).toBe(false);
    expect(serviceMonitorGoing('u1', { uid: 'u1' })).toBe(false);
    // The replacement being deleted in turn is its own key's business.
    expect(serviceMonitorGoing('u1', { uid: 'u2', deletionTimestamp: '2026-01-01T00:00:00Z' })).toBe(false);
  });
});
