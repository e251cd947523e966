/**
 * What the autoscaler keeps in Redis, so any worker can write any VA and any process can serve its
 * metrics: the cycle's decision per VA, the values behind each VA's gauges, and a record of the last
 * cycle. Everything read back is parsed with zod.
 */
import type { RedisClient } from '../../queue/connection.js';
import { z } from 'zod';
import { parseJson } from '../../kube/json.js';
import { parseVariantDecision, type VariantDecision } from './saturation/decision.js';
import type { StateWrite } from '../../queue/fenced-write.js';
import type { HandlerContext } from '../../runtime/function.js';
import { stateKeys } from './keys.js';
import { counterFieldSchema, operatorGaugesSchema, type Increment, type OperatorGauges } from './metrics/operator-metrics.js';

/** What the state's writers use: reads on the client, writes fenced by the running claim (ctx.state). */
export type StateIO = Pick<HandlerContext, 'redis' | 'state' | 'prefix'>;

export const seriesRecordSchema = z.object({
  /** The scale target's name: HPA/KEDA selectors match `variant_name` on it (as WVA v0.5.0 does). */
  variantName: z.string().min(1),
  namespace: z.string().min(1),
  accelerator: z.string().min(1),
  current: z.number().int().min(0),
  desired: z.number().int().min(0),
  /** RFC 3339: not served after this (no cycle confirmed the decision since: a frozen series must not drive an HPA). */
  validUntil: z.string().optional(),
});
export type SeriesRecord = z.infer<typeof seriesRecordSchema>;

export async function readDecision(redis: RedisClient, prefix: string, vaKey: string): Promise<VariantDecision | undefined> {
  const text = await redis.hget(stateKeys(prefix).decisions, vaKey);
  if (text === null) return undefined;
  const r = parseVariantDecision(parseJson(text));
  return r.ok ? r.value : undefined;
}

/** Why a cycle left a VA out; the VA's reconcile puts it on its conditions and publishes nothing. */
export const inactiveRecordSchema = z.object({
  reason: z.string().min(1),
  message: z.string(),
  at: z.string(),
  /** The accelerator of the desired-0 series of a Deployment at 0 replicas, as the cycle wrote it. */
  accelerator: z.string().optional(),
});
export type InactiveRecord = z.infer<typeof inactiveRecordSchema>;

export async function readInactive(redis: RedisClient, prefix: string, vaKey: string): Promise<InactiveRecord | undefined> {
  const text = await redis.hget(stateKeys(prefix).inactive, vaKey);
  if (text === null) return undefined;
  const r = inactiveRecordSchema.safeParse(parseJson(text));
  return r.success ? r.data : undefined;
}

/**
 * Stores a cycle's decisions, and for the VAs it left out their reason instead of a decision: their
 * old decision and series go at once (a VA whose Deployment is at 0 replicas gets a desired-0 series instead) (a Deployment scaled to 0 by hand must not be scaled back up
 * by KEDA reading a frozen desired; a duplicate VA's frozen series must not win the scrape). Also
 * forgets everything of VAs that no longer exist (VA Delete events are blocked by seed 003, so the
 * cycle is where a deleted VA's gauges go away). VAs in none of the three lists (their namespace
 * could not be read this cycle) are left as they are.
 */
export async function storeCycleDecisions(
  { redis, state, prefix }: StateIO,
  decisions: readonly VariantDecision[],
  existingVaKeys: ReadonlySet<string>,
  inactive: ReadonlyArray<{ key: string; reason: string; message: string; zeroSeries?: Omit<SeriesRecord, 'desired' | 'validUntil'> }> = [],
  at = new Date().toISOString(),
  /** The decisions hash's fields as the cycle read them (`readAllDecisions`), so it is not read twice. */
  knownDecisionKeys?: ReadonlySet<string>,
): Promise<string[]> {
  const keys = stateKeys(prefix);
  // Only the cycle writes decisions (one at a time), so the fields it read are still all there are.
  const [known, published, left] = await Promise.all([
    knownDecisionKeys !== undefined ? Promise.resolve([...knownDecisionKeys]) : redis.hkeys(keys.decisions),
    redis.hkeys(keys.series),
    redis.hkeys(keys.inactive),
  ]);
  const gone = [...new Set([...known, ...published, ...left])].filter((k) => !existingVaKeys.has(k));
  // One fenced write: a cycle cut off from Redis whose writes arrive after a newer cycle's claim changes nothing.
  const tx: StateWrite[] = [];
  for (const d of decisions) tx.push({ command: 'HSET', key: keys.decisions, args: [d.key, JSON.stringify(d)] });
  if (decisions.length > 0) tx.push({ command: 'HDEL', key: keys.inactive, args: decisions.map((d) => d.key) });
  for (const i of inactive) {
    tx.push({ command: 'HSET', key: keys.inactive, args: [i.key, JSON.stringify({ reason: i.reason, message: i.message, at, ...(i.zeroSeries ? { accelerator: i.zeroSeries.accelerator } : {}) })] });
    if (i.zeroSeries) tx.push({ command: 'HSET', key: keys.series, args: [i.key, JSON.stringify(seriesRecordSchema.parse({ ...i.zeroSeries, desired: 0 }))] });
  }
  const silenced = [...gone, ...inactive.filter((i) => !i.zeroSeries).map((i) => i.key)];
  const undecided = inactive.filter((i) => i.zeroSeries).map((i) => i.key);
  if (undecided.length > 0) tx.push({ command: 'HDEL', key: keys.decisions, args: undecided });
  if (silenced.length > 0) {
    tx.push({ command: 'HDEL', key: keys.decisions, args: silenced });
    tx.push({ command: 'HDEL', key: keys.series, args: silenced });
  }
  if (gone.length > 0) tx.push({ command: 'HDEL', key: keys.inactive, args: gone });
  await state.write(tx);
  return gone;
}

/** The VA's gauges now show this. */
export async function publishSeries({ state, prefix }: StateIO, vaKey: string, record: SeriesRecord): Promise<void> {
  await state.write([{ command: 'HSET', key: stateKeys(prefix).series, args: [vaKey, JSON.stringify(seriesRecordSchema.parse(record))] }]);
}

/** Several variants' gauges at once (the annotated scalers' variants, which the cycle publishes itself). */
export async function publishSeriesBatch({ state, prefix }: StateIO, entries: ReadonlyArray<{ vaKey: string; record: SeriesRecord }>): Promise<void> {
  if (entries.length === 0) return;
  await state.write(entries.map((e) => ({ command: 'HSET', key: stateKeys(prefix).series, args: [e.vaKey, JSON.stringify(seriesRecordSchema.parse(e.record))] })));
}

/** The target is gone (or the VA is): its decision and its series go, so nothing stale is exported or re-applied. */
export async function forgetVariant({ state, prefix }: StateIO, vaKey: string): Promise<void> {
  const keys = stateKeys(prefix);
  await state.write([keys.decisions, keys.series, keys.inactive].map((key) => ({ command: 'HDEL', key, args: [vaKey] })));
}

/** Only the gauges go (the VA is left out of cycles; its reason stays for its status). */
export async function unpublishSeries({ state, prefix }: StateIO, vaKey: string): Promise<void> {
  await state.write([{ command: 'HDEL', key: stateKeys(prefix).series, args: [vaKey] }]);
}

/**
 * All stored decisions, for the cycle's "previous decision" of each VA, and every field of the hash
 * (unreadable ones too, so the cycle can forget them when their VA is gone).
 */
export async function readAllDecisions(redis: RedisClient, prefix: string): Promise<{ decisions: Map<string, VariantDecision>; keys: Set<string> }> {
  const all = await redis.hgetall(stateKeys(prefix).decisions);
  const decisions = new Map<string, VariantDecision>();
  for (const [vaKey, text] of Object.entries(all)) {
    const r = parseVariantDecision(parseJson(text));
    if (r.ok) decisions.set(vaKey, r.value);
  }
  return { decisions, keys: new Set(Object.keys(all)) };
}

/** The series to serve now: expired ones (see `validUntil`) are left out. */
export async function readAllSeries(redis: RedisClient, prefix: string, now = new Date()): Promise<Array<{ vaKey: string; record: SeriesRecord }>> {
  const all = await redis.hgetall(stateKeys(prefix).series);
  const out: Array<{ vaKey: string; record: SeriesRecord }> = [];
  for (const [vaKey, text] of Object.entries(all)) {
    const r = seriesRecordSchema.safeParse(parseJson(text));
    if (r.success && !seriesExpired(r.data, now)) out.push({ vaKey, record: r.data });
  }
  return out.sort((a, b) => (a.vaKey < b.vaKey ? -1 : a.vaKey > b.vaKey ? 1 : 0));
}

export function seriesExpired(record: Pick<SeriesRecord, 'validUntil'>, now: Date): boolean {
  return record.validUntil !== undefined && Date.parse(record.validUntil) < now.getTime();
}

/** What the last cycle saw and decided, for operators (`redis-cli get …:last-cycle`) and tests. */
export const cycleRecordSchema = z.object({
  at: z.string(),
  intervalMs: z.number(),
  prometheus: z.string(),
  models: z.array(
    z.object({
      key: z.string(),
      thresholds: z.object({
        kvCacheThreshold: z.number(),
        queueLengthThreshold: z.number(),
        kvSpareTrigger: z.number(),
        queueSpareTrigger: z.number(),
        enableLimiter: z.boolean(),
        analyzerName: z.string().optional(),
        scaleUpThreshold: z.number().optional(),
        scaleDownBoundary: z.number().optional(),
      }),
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
  /** Models with every variant at 0 replicas: the requests waiting for them in the gateway, and the variant woken. */
  atZero: z.array(z.object({ key: z.string(), pending: z.string(), woke: z.string().optional() })).optional(),
  /** Namespaces whose Deployments or pods could not be listed, with the error: their VAs sat this cycle out. */
  unreadableNamespaces: z.record(z.string(), z.string()).optional(),
});
export type CycleRecord = z.infer<typeof cycleRecordSchema>;

export async function storeCycleRecord({ state, prefix }: StateIO, record: CycleRecord): Promise<void> {
  await state.write([{ command: 'SET', key: stateKeys(prefix).lastCycle, args: [JSON.stringify(record)] }]);
}

export async function readCycleRecord(redis: RedisClient, prefix: string): Promise<CycleRecord | undefined> {
  const text = await redis.get(stateKeys(prefix).lastCycle);
  if (text === null) return undefined;
  const r = cycleRecordSchema.safeParse(parseJson(text));
  return r.success ? r.data : undefined;
}

/**
 * A cycle's operator metrics: the gauges replaced whole (when given: a failed cycle adds only to the
 * counters), the counters and histograms added to. One fenced write, like the decisions.
 */
export async function storeOperatorMetrics(
  { redis, state, prefix }: StateIO,
  gauges: OperatorGauges | undefined,
  increments: readonly Increment[],
  /** VAs gone since the last cycle: their per-variant counters (wva_decisions_limited_total) go too, so Redis holds only live series. */
  goneVaKeys: readonly string[] = [],
): Promise<void> {
  const keys = stateKeys(prefix);
  const tx: StateWrite[] = increments.filter((i) => i.by !== 0).map((i) => ({ command: 'HINCRBY', key: keys.counters, args: [i.field, i.by] }));
  if (goneVaKeys.length > 0) {
    const gone = new Set(goneVaKeys);
    const stale = (await redis.hkeys(keys.counters)).filter((field) => {
      const f = counterFieldSchema.safeParse(parseJson(field));
      const l = f.success ? f.data[1] : undefined;
      return l?.['variant_name'] !== undefined && l['namespace'] !== undefined && gone.has(`${l['namespace']}/${l['variant_name']}`);
    });
    if (stale.length > 0) tx.push({ command: 'HDEL', key: keys.counters, args: stale });
  }
  if (gauges !== undefined) tx.push({ command: 'SET', key: keys.operatorGauges, args: [JSON.stringify(operatorGaugesSchema.parse(gauges))] });
  await state.write(tx);
}

export async function readOperatorGauges(redis: RedisClient, prefix: string): Promise<OperatorGauges | undefined> {
  const text = await redis.get(stateKeys(prefix).operatorGauges);
  if (text === null) return undefined;
  const r = operatorGaugesSchema.safeParse(parseJson(text));
  return r.success ? r.data : undefined;
}

/** Every counter and histogram field: metric name, labels and total. Unreadable fields are left out. */
export async function readCounters(redis: RedisClient, prefix: string): Promise<Array<{ name: string; labels: Record<string, string>; value: number }>> {
  const all = await redis.hgetall(stateKeys(prefix).counters);
  const out: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const [field, text] of Object.entries(all)) {
    const f = counterFieldSchema.safeParse(parseJson(field));
    const value = Number(text);
    if (f.success && Number.isFinite(value)) out.push({ name: f.data[0], labels: f.data[1], value });
  }
  return out;
}
