import { describe, expect, it } from 'vitest';
import { limitByGpus, normalizeAcceleratorName, type LimiterCandidate } from './limiter.js';

const c = (id: string, over: Partial<LimiterCandidate>): LimiterCandidate => ({ id, accelerator: 'A100', currentReplicas: 1, targetReplicas: 1, gpusPerReplica: 1, spareCapacity: 0.3, cost: 10, ...over });

describe('limitByGpus', () => {
  it('limits only scale-ups, most saturated first, then cheapest', () => {
    const r = limitByGpus(
      [
        c('relaxed', { currentReplicas: 1, targetReplicas: 2, spareCapacity: 0.09 }),
        c('pressed', { currentReplicas: 1, targetReplicas: 2, spareCapacity: 0.02 }),
        c('down', { currentReplicas: 3, targetReplicas: 2 }),
      ],
      { A100: 6 }, // 5 in use by current replicas → 1 free
    );
    expect(r['pressed']).toEqual({ targetReplicas: 2, gpusAllocated: 1, wasLimited: false });
    expect(r['relaxed']).toEqual({ targetReplicas: 1, gpusAllocated: 0, wasLimited: true });
    expect(r['down']).toEqual({ targetReplicas: 2, gpusAllocated: 0, wasLimited: false });
  });

  it('counts GPUs per replica and keeps the replicas that fit', () => {
    const r = limitByGpus([c('big', { currentReplicas: 0, targetReplicas: 3, gpusPerReplica: 4 })], { H100: 16, A100: 8 }, { A100: 0 });
    expect(r['big']).toEqual({ targetReplicas: 2, gpusAllocated: 8, wasLimited: true });
  });

  it('breaks equal saturation by cost', () => {
    const r = limitByGpus([c('dear', { targetReplicas: 2, cost: 50 }), c('cheap', { targetReplicas: 2, cost: 30 })], { A100: 3 });
    expect(r['cheap']?.targetReplicas).toBe(2);
    expect(r['dear']?.wasLimited).toBe(true);
  });

  it('gives nothing to an accelerator type with no known capacity', () => {
    expect(limitByGpus([c('x', { accelerator: 'unresolved', targetReplicas: 2 })], { A100: 100 })['x']).toEqual({ targetReplicas: 1, gpusAllocated: 0, wasLimited: true });
  });
});

describe('normalizeAcceleratorName', () => {
  it.each([
    ['NVIDIA-A100-SXM4-80GB', 'A100'],
    ['NVIDIA-H100-80GB-HBM3', 'H100'],
    ['AMD-MI300X', 'MI300X'],
    ['Intel-Gaudi-2-96GB', 'Gaudi-2'],
    ['A100', 'A100'],
    ['H100-SXM', 'H100-SXM'],
  ])('%s → %s', (from, to) => {
    expect(normalizeAcceleratorName(from)).toBe(to);
  });
});
