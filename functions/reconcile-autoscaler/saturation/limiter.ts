/**
 * The optional GPU limiter: scale-ups across all models compete for the free GPUs of their
 * accelerator type; the most saturated variants are served first, then the cheapest.
 */

export interface LimiterCandidate {
  id: string;
  accelerator: string;
  currentReplicas: number;
  targetReplicas: number;
  /** Defaults to 1 when 0 or less. */
  gpusPerReplica: number;
  /** Lower means more saturated (the variant's average spare KV cache). */
  spareCapacity: number;
  cost: number;
}

export interface LimiterResult {
  targetReplicas: number;
  gpusAllocated: number;
  wasLimited: boolean;
}

/**
 * Free GPUs per type are `capacity - used`, with `used` defaulting to what the candidates' current
 * replicas hold. Only scale-ups are limited; a scale-up that does not fit entirely keeps the replicas
 * that do fit.
 */
export function limitByGpus(
  candidates: readonly LimiterCandidate[],
  capacityByType: Readonly<Record<string, number>>,
  usedByType?: Readonly<Record<string, number>>,
): Record<string, LimiterResult> {
  const gpus = (c: LimiterCandidate) => (c.gpusPerReplica > 0 ? c.gpusPerReplica : 1);
  const used: Record<string, number> = { ...(usedByType ?? {}) };
  if (usedByType === undefined) {
    for (const c of candidates) if (c.accelerator) used[c.accelerator] = (used[c.accelerator] ?? 0) + c.currentReplicas * gpus(c);
  }
  const free: Record<string, number> = {};
  for (const [type, cap] of Object.entries(capacityByType)) free[type] = Math.max(0, cap - (used[type] ?? 0));

  const out: Record<string, LimiterResult> = {};
  for (const c of candidates) out[c.id] = { targetReplicas: c.targetReplicas, gpusAllocated: 0, wasLimited: false };

  const scaleUps = candidates
    .filter((c) => c.targetReplicas > c.currentReplicas)
    .sort((a, b) => a.spareCapacity - b.spareCapacity || a.cost - b.cost || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const c of scaleUps) {
    const wanted = c.targetReplicas - c.currentReplicas;
    const available = free[c.accelerator] ?? 0;
    const granted = Math.min(wanted, Math.floor(available / gpus(c)));
    free[c.accelerator] = available - granted * gpus(c);
    out[c.id] = { targetReplicas: c.currentReplicas + granted, gpusAllocated: granted * gpus(c), wasLimited: granted < wanted };
  }
  return out;
}

/**
 * Short accelerator name from a GPU product label, e.g. `NVIDIA-A100-SXM4-80GB` → `A100`,
 * `Intel-Gaudi-2-96GB` → `Gaudi-2`. Names without a vendor prefix are kept as they are.
 */
export function normalizeAcceleratorName(product: string): string {
  const parts = product.split('-');
  const vendor = parts[0]?.toUpperCase();
  if (parts.length < 2 || (vendor !== 'NVIDIA' && vendor !== 'AMD' && vendor !== 'INTEL')) return product;
  if (vendor === 'INTEL' && parts.length >= 3) return `${parts[1]}-${parts[2]}`;
  return parts[1] ?? product;
}
