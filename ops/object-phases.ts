import { Gauge, type Registry } from 'prom-client';
import { z } from 'zod';
import { readForScrape } from '../queue/scrape.js';
import { collectionPath, type ResourceRef } from '../kube/resources.js';

export const OBJECT_PHASE_METRIC = 'ripple_object_phase';

const listSchema = z.object({
  items: z.array(
    z.object({
      metadata: z.object({ name: z.string(), namespace: z.string().optional() }),
      status: z.object({ phase: z.string().optional() }).passthrough().optional(),
    }),
  ),
});

export interface ObjectPhase {
  kind: string;
  namespace: string;
  name: string;
  phase: string;
}

/** The phase of every listed object that has one (objects not reconciled yet have none). */
export function phasesOf(kind: string, list: unknown): ObjectPhase[] {
  const parsed = listSchema.safeParse(list);
  if (!parsed.success) return [];
  const out: ObjectPhase[] = [];
  for (const item of parsed.data.items) {
    const phase = item.status?.phase;
    if (phase) out.push({ kind, namespace: item.metadata.namespace ?? '', name: item.metadata.name, phase });
  }
  return out;
}

export interface ObjectPhaseSources {
  resources: ResourceRef[];
  /** RIPPLE_WATCH_NAMESPACE, or undefined for all namespaces. */
  namespace?: string;
  /** GET a collection path with query parameters (kubeRequest with the process's credentials). */
  get(path: string, query: Record<string, string>): Promise<unknown>;
}

/**
 * `ripple_object_phase{kind,namespace,name,phase} 1` for every ModelServing and VariantAutoscaling
 * with a `status.phase` — one series per object, carrying the current phase, as kube-state-metrics
 * does for pods — so an alert can say which object is stuck in Degraded or Failed. Read at scrape time
 * with `resourceVersion=0` (the API server answers from its watch cache, not etcd); a kind whose CRD
 * is not installed, or a list that does not answer within the scrape bound, is left out of that scrape.
 */
export function registerObjectPhases(registry: Registry, s: ObjectPhaseSources): void {
  if (registry.getSingleMetric(OBJECT_PHASE_METRIC)) return;
  new Gauge({
    name: OBJECT_PHASE_METRIC,
    help: 'Current status.phase of each ModelServing and VariantAutoscaling (value 1; the phase is a label)',
    labelNames: ['kind', 'namespace', 'name', 'phase'],
    registers: [registry],
    async collect() {
      this.reset();
      const lists = await Promise.all(s.resources.map((r) => readForScrape(() => s.get(collectionPath(r, s.namespace), { resourceVersion: '0' }))));
      s.resources.forEach((r, i) => {
        for (const p of phasesOf(r.kind, lists[i])) this.set({ kind: p.kind, namespace: p.namespace, name: p.name, phase: p.phase }, 1);
      });
    },
  });
}
