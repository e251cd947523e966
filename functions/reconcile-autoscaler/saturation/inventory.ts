/**
 * GPU capacity per accelerator type, for the limiter: the allocatable GPUs of every schedulable node,
 * by the (shortened) GPU product its label names. Nodes without a product label cannot be matched to
 * an accelerator type and are left out.
 */
import { normalizeAcceleratorName } from './limiter.js';

const GPU_RESOURCES = ['nvidia.com/gpu', 'amd.com/gpu', 'intel.com/gpu'];
const GPU_PRODUCT_LABELS = ['nvidia.com/gpu.product', 'amd.com/gpu.product', 'intel.com/gpu.product'];

export interface NodeGpuFacts {
  labels?: Readonly<Record<string, string>>;
  allocatable?: Readonly<Record<string, string>>;
  unschedulable?: boolean;
}

function wholeCount(q: string | undefined): number {
  const t = q?.trim() ?? '';
  return /^\d+$/.test(t) ? Number(t) : 0;
}

export function gpuCapacityByType(nodes: readonly NodeGpuFacts[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of nodes) {
    if (n.unschedulable) continue;
    const gpus = GPU_RESOURCES.reduce((sum, r) => sum + wholeCount(n.allocatable?.[r]), 0);
    if (gpus === 0) continue;
    const product = GPU_PRODUCT_LABELS.map((l) => n.labels?.[l]).find((v) => v !== undefined && v !== '');
    if (product === undefined) continue;
    const type = normalizeAcceleratorName(product);
    out[type] = (out[type] ?? 0) + gpus;
  }
  return out;
}
