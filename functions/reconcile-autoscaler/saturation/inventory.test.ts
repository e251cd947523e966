import { describe, expect, it } from 'vitest';
import { gpuCapacityByType } from './inventory.js';

describe('gpuCapacityByType', () => {
  it('sums allocatable GPUs of schedulable nodes by shortened product', () => {
    expect(
      gpuCapacityByType([
        { labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }, allocatable: { 'nvidia.com/gpu': '8' } },
        { labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100-PCIE-40GB' }, allocatable: { 'nvidia.com/gpu': '4' } },
        { labels: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' }, allocatable: { 'nvidia.com/gpu': '8' }, unschedulable: true },
        { labels: { 'amd.com/gpu.product': 'AMD-MI300X' }, allocatable: { 'amd.com/gpu': '8' } },
        { labels: {}, allocatable: { 'nvidia.com/gpu': '2' } },
        { labels: { 'nvidia.com/gpu.product': 'NVIDIA-L4' }, allocatable: { cpu: '8' } },
      ]),
    ).toEqual({ A100: 12, MI300X: 8 });
  });
});
