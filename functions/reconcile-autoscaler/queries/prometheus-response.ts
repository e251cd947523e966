/**
 * Responses of Prometheus's HTTP API (`/api/v1/query`), validated with zod. Sample values arrive as
 * strings ("0.42", "NaN", "+Inf"); they are turned into numbers here.
 */
import { z } from 'zod';

const sampleValue = z.tuple([z.number(), z.string()]);
const labels = z.record(z.string(), z.string());

const vectorData = z.object({ resultType: z.literal('vector'), result: z.array(z.object({ metric: labels, value: sampleValue })) });
const matrixData = z.object({ resultType: z.literal('matrix'), result: z.array(z.object({ metric: labels, values: z.array(sampleValue) })) });
const scalarData = z.object({ resultType: z.literal('scalar'), result: sampleValue });
const stringData = z.object({ resultType: z.literal('string'), result: sampleValue });

export const prometheusResponseSchema = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('success'),
    data: z.discriminatedUnion('resultType', [vectorData, matrixData, scalarData, stringData]),
    warnings: z.array(z.string()).optional(),
    infos: z.array(z.string()).optional(),
  }),
  z.object({
    status: z.literal('error'),
    errorType: z.string(),
    error: z.string(),
    data: z.unknown().optional(),
    warnings: z.array(z.string()).optional(),
  }),
]);
export type PrometheusResponse = z.infer<typeof prometheusResponseSchema>;

export interface Sample {
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch. */
  timestampMs: number;
}

export type VectorResult = { ok: true; samples: Sample[]; warnings: string[] } | { ok: false; error: string };

function toNumber(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  return Number(text);
}

/** An instant-vector (or scalar) query response as samples; any other shape or an error response is an error. */
export function parseInstantVector(body: unknown): VectorResult {
  const r = prometheusResponseSchema.safeParse(body);
  if (!r.success) return { ok: false, error: `unexpected response from Prometheus: ${r.error.issues[0]?.path.join('.') ?? ''} ${r.error.issues[0]?.message ?? ''}`.trim() };
  const res = r.data;
  if (res.status === 'error') return { ok: false, error: `${res.errorType}: ${res.error}` };
  const warnings = res.warnings ?? [];
  switch (res.data.resultType) {
    case 'vector':
      return { ok: true, warnings, samples: res.data.result.map((s) => ({ labels: s.metric, value: toNumber(s.value[1]), timestampMs: s.value[0] * 1000 })) };
    case 'scalar':
      return { ok: true, warnings, samples: [{ labels: {}, value: toNumber(res.data.result[1]), timestampMs: res.data.result[0] * 1000 }] };
    default:
      return { ok: false, error: `expected an instant vector, got a ${res.data.resultType}` };
  }
}

/**
 * One value per pod: the pod comes from label `pod`, else `pod_name`. Samples without a pod or
 * with a non-finite value are left out; a pod seen twice keeps its larger value.
 */
export function valuesByPod(samples: readonly Sample[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) {
    const pod = s.labels['pod'] || s.labels['pod_name'];
    if (!pod || !Number.isFinite(s.value)) continue;
    const prev = out.get(pod);
    out.set(pod, prev === undefined ? s.value : Math.max(prev, s.value));
  }
  return out;
}

/**
 * The single value of a `sum(...)` query. An empty result means the series do not exist (yet), so
 * the count is unknown rather than zero: scale-to-zero must only act on a confirmed zero.
 */
export function parseSingleValue(body: unknown): { ok: true; value: number } | { ok: false; error: string } {
  const v = parseInstantVector(body);
  if (!v.ok) return v;
  const finite = v.samples.filter((s) => Number.isFinite(s.value));
  if (finite.length === 0) return { ok: false, error: 'no data: the metric has no series yet' };
  return { ok: true, value: finite.reduce((a, s) => a + s.value, 0) };
}
