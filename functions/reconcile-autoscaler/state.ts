/**
 * What the autoscaler keeps in Redis, so any worker can write any VA and any process can serve its
 * metrics: the cycle's decision per VA, the values behind each VA's gauges, and a record of the last
 * cycle. Everything read back is parsed with zod.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { parseJson } from '../../kube/json.js';
import { parseVariantDecision, type VariantDecision } from './saturation/decision.js';
import { stateKeys } from './keys.js';

export const seriesRecordSchema = z.object({
  /** The scale target's name: HPA/KEDA selectors match `variant_name` on it (as WVA v0.5.0 does). */
  variantName: z.string().min(1),
  namespace: z.string().min(1),
  accelerator: z.string().min(1),
  current: z.number().int().min(0),
  desired: z.number().int().min(0),
});
export type SeriesRecord = z.infer<typeof seriesRecordSchema>;

export async function readDecision(redis: Redis, prefix: string, vaKey: string): Promise<VariantDecision | undefined> {
  const text = await redis.hget(stateKeys(prefix).decisions, vaKey);
  if (text === null) return undefined;
  const r = parseVariantDecision(parseJson(text));
  return r.ok ? r.value : undefined;
}

/**
 * Stores a cycle's decisions and forgets the decisions and series of VAs that no longer exist (VA
 * Delete events are blocked by seed 003, so the cycle is where a deleted VA's gauges go away).
 */
export async function storeCycleDecisions(redis: Redis, prefix: string, decisions: readonly VariantDecision[], existingVaKeys: ReadonlySet<string>): Promise<string[]> {
  const keys = stateKeys(prefix);
  const [known, published] = await Promise.all([redis.hkeys(keys.decisions), redis.hkeys(keys.series)]);
  const gone = [...new Set([...known, ...published])].filter((k) => !existingVaKeys.has(k));
  const tx = redis.multi();
  for (const d of decisions) tx.hset(keys.decisions, d.key, JSON.stringify(d));
  if (gone.length > 0) {
    tx.hdel(keys.decisions, ...gone);
    tx.hdel(keys.series, ...gone);
  }
  await tx.exec();
  return gone;
}

/** The VA's gauges now show this. */
export async function publishSeries(redis: Redis, prefix: string, vaKey: string, record: SeriesRecord): Promise<void> {
  await redis.hset(stateKeys(prefix).series, vaKey, JSON.stringify(seriesRecordSchema.parse(record)));
}

/** The target is gone (or the VA is): its decision and its series go, so nothing stale is exported or re-applied. */
export async function forgetVariant(redis: Redis, prefix: string, vaKey: string): Promise<void> {
  const keys = stateKeys(prefix);
  await redis.multi().hdel(keys.decisions, vaKey).hdel(keys.series, vaKey).exec();
}

export async function readAllSeries(redis: Redis, prefix: string): Promise<Array<{ vaKey: string; record: SeriesRecord }>> {
  const all = await redis.hgetall(stateKeys(prefix).series);
  const out: Array<{ vaKey: string; record: SeriesRecord }> = [];
  for (const [vaKey, text] of Object.entries(all)) {
    const r = seriesRecordSchema.safeParse(parseJson(text));
    if (r.success) out.push({ vaKey, record: r.data });
  }
  return out.sort((a, b) => (a.vaKey < b.vaKey ? -1 : a.vaKey > b.vaKey ? 1 : 0));
}

/** What the last cycle saw and decided, for operators (`redis-cli get …:last-cycle`) and tests. */
export const cycleRecordSchema = z.object({
  at: z.string(),
  intervalMs: z.number(),
  prometheus: z.string(),
  models: z.array(
    z.object({
      key: z.string(),
      thresholds: z.object({ kvCacheThreshold: z.number(), queueLengthThreshold: z.number(), kvSpareTrigger: z.number(), queueSpareTrigger: z.number(), enableLimiter: z.boolean() }),
      overrideKey: z.string().optional(),
      inTransition: z.boolean(),
      step: z.object({ kind: z.string(), variantName: z.string().optional(), reason: z.string() }).optional(),
      note: z.string().optional(),
      replicas: z.number().optional(),
    }),
  ),
  inactive: z.array(z.object({ key: z.string(), reason: z.string(), message: z.string() })),
  decisions: z.array(z.object({ key: z.string(), desiredReplicas: z.number(), source: z.string(), reason: z.string() })),
  limiter: z.string(),
});
export type CycleRecord = z.infer<typeof cycleRecordSchema>;

export async function storeCycleRecord(redis: Redis, prefix: string, record: CycleRecord): Promise<void> {
  await redis.set(stateKeys(prefix).lastCycle, JSON.stringify(record));
}

export async function readCycleRecord(redis: Redis, prefix: string): Promise<CycleRecord | undefined> {
  const text = await redis.get(stateKeys(prefix).lastCycle);
  if (text === null) return undefined;
  const r = cycleRecordSchema.safeParse(parseJson(text));
  return r.success ? r.data : undefined;
}
