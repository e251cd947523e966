/**
 * Serves the operator metrics (operator-metrics.ts) on the process registry, read from Redis at scrape
 * time like the replica gauges: every Ripple process answers the same, whichever worker ran the cycle.
 * Counters and histograms are totals kept in Redis, so they survive a restart of any process and never
 * double when two processes are scraped (each serves the one total; aggregate with max, not sum).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { readForScrape } from '../../../queue/scrape.js';
import type { MetricsDeps } from '../../../runtime/function.js';
import { autoscalerNames } from '../config/names.js';
import { readCounters, readOperatorGauges } from '../state.js';
import { COUNTERS, HISTOGRAMS, OPERATOR_METRIC, type CounterName, type HistogramName, type OperatorGauges } from './operator-metrics.js';
import { LABEL, variantNameLabelValue } from './series.js';

type Labels = Record<string, string>;

interface GaugeDef {
  name: string;
  help: string;
  labelNames: string[];
  values: (g: OperatorGauges, variantName: (vaKey: string, targetName: string) => string) => Array<{ labels: Labels; value: number }>;
}

const per = (g: OperatorGauges) => g.variants;

/** Upstream's help texts, shortened; the label sets are upstream's. */
const GAUGES: GaugeDef[] = [
  { name: OPERATOR_METRIC.modelsProcessed, help: 'Number of models processed in the last optimization cycle', labelNames: [], values: (g) => [{ labels: {}, value: g.modelsProcessed }] },
  {
    name: OPERATOR_METRIC.configInfo,
    help: 'WVA configuration information (value is always 1)',
    labelNames: ['analyzer_name', 'limiter_enabled', 'scale_to_zero_enabled'],
    values: (g) => [{ labels: { analyzer_name: g.config.analyzerName, limiter_enabled: String(g.config.limiterEnabled), scale_to_zero_enabled: String(g.config.scaleToZeroEnabled) }, value: 1 }],
  },
  { name: OPERATOR_METRIC.configKvSpareThreshold, help: 'Global default (not per-model override) KV cache spare threshold configuration value', labelNames: [], values: (g) => [{ labels: {}, value: g.config.kvSpareTrigger }] },
  { name: OPERATOR_METRIC.configQueueSpareThreshold, help: 'Global default (not per-model override) queue spare threshold configuration value', labelNames: [], values: (g) => [{ labels: {}, value: g.config.queueSpareTrigger }] },
  { name: OPERATOR_METRIC.configOptimizationInterval, help: 'Optimization interval in seconds', labelNames: [], values: (g) => [{ labels: {}, value: g.config.intervalSeconds }] },
  {
    name: OPERATOR_METRIC.podsDiscovered,
    help: 'Number of pods discovered for a namespace',
    labelNames: ['namespace'],
    values: (g) => Object.entries(g.podsDiscovered).map(([namespace, value]) => ({ labels: { namespace }, value })),
  },
  {
    name: OPERATOR_METRIC.freshness,
    help: 'Freshness status of metrics for each variant (pods per status)',
    labelNames: ['variant_name', 'status'],
    values: (g, vn) => per(g).flatMap((v) => Object.entries(v.freshness).map(([status, value]) => ({ labels: { variant_name: vn(v.vaKey, v.targetName), status }, value }))),
  },
  {
    name: OPERATOR_METRIC.utilization,
    help: 'Per-variant utilization ratio (0.0-1.0) from saturation analysis',
    labelNames: ['variant_name', 'namespace', 'model_name', 'accelerator_type'],
    values: (g, vn) => per(g).flatMap((v) => (v.saturation ? [{ labels: { variant_name: vn(v.vaKey, v.targetName), namespace: v.namespace, model_name: v.modelID, accelerator_type: v.accelerator }, value: v.saturation.utilization }] : [])),
  },
  {
    name: OPERATOR_METRIC.spareCapacity,
    help: 'Spare capacity; >0 indicates safe scale-down headroom (unit "": a threshold-relative fraction; "continuous": tokens)',
    labelNames: ['variant_name', 'namespace', 'model_name', 'unit'],
    values: (g, vn) => per(g).flatMap((v) => (v.saturation ? [{ labels: { variant_name: vn(v.vaKey, v.targetName), namespace: v.namespace, model_name: v.modelID, unit: v.saturation.unit === 'binary' ? '' : v.saturation.unit }, value: v.saturation.spare }] : [])),
  },
  {
    name: OPERATOR_METRIC.requiredCapacity,
    help: 'Required capacity; >0 indicates scale-up needed (unit "binary": a 0/1 signal; "continuous": tokens)',
    labelNames: ['variant_name', 'namespace', 'model_name', 'unit'],
    values: (g, vn) => per(g).flatMap((v) => (v.saturation ? [{ labels: { variant_name: vn(v.vaKey, v.targetName), namespace: v.namespace, model_name: v.modelID, unit: v.saturation.unit }, value: v.saturation.required }] : [])),
  },
  {
    name: OPERATOR_METRIC.kvTokensUsed,
    help: 'Total KV cache tokens currently in use across all replicas of a variant',
    labelNames: ['variant_name', 'namespace', 'model_name'],
    values: (g, vn) => per(g).flatMap((v) => (v.saturation?.kvTokensUsed !== undefined ? [{ labels: { variant_name: vn(v.vaKey, v.targetName), namespace: v.namespace, model_name: v.modelID }, value: v.saturation.kvTokensUsed }] : [])),
  },
  {
    name: OPERATOR_METRIC.kvTokensCapacity,
    help: 'Total KV cache token capacity across all replicas of a variant',
    labelNames: ['variant_name', 'namespace', 'model_name'],
    values: (g, vn) => per(g).flatMap((v) => (v.saturation?.kvTokensCapacity !== undefined ? [{ labels: { variant_name: vn(v.vaKey, v.targetName), namespace: v.namespace, model_name: v.modelID }, value: v.saturation.kvTokensCapacity }] : [])),
  },
  {
    name: OPERATOR_METRIC.saturationUp,
    help: 'Per-VA freshness signal for the saturation/capacity gauges: 1 when the last cycle decided the variant from fresh metrics, else 0',
    labelNames: ['variant_name', 'namespace'],
    values: (g, vn) => per(g).map((v) => ({ labels: { variant_name: vn(v.vaKey, v.targetName), namespace: v.namespace }, value: v.up ? 1 : 0 })),
  },
];

/** A histogram whose buckets, sum and count are the totals kept in Redis, not observations of this process. */
class StoredHistogram extends Histogram {
  constructor(
    private readonly metric: HistogramName,
    private readonly read: () => Promise<Array<{ name: string; labels: Labels; value: number }> | undefined>,
    private readonly extra: Labels,
    registry: Registry,
  ) {
    super({ name: metric, help: HISTOGRAMS[metric].help, labelNames: [...HISTOGRAMS[metric].labelNames, ...Object.keys(extra)], buckets: [...HISTOGRAMS[metric].buckets], registers: [registry] });
  }

  /** prom-client's text exposition reads histograms through this, and its get() (JSON) calls it too. */
  getForPromString() {
    return this.stored();
  }

  private async stored() {
    const rows = (await this.read()) ?? [];
    const values = rows.flatMap((r) => {
      const labels = { ...r.labels, ...this.extra };
      if (r.name === `${this.metric}_bucket` || r.name === `${this.metric}_count`) return [{ labels, value: r.value, metricName: r.name }];
      if (r.name === `${this.metric}_sum_us`) return [{ labels, value: r.value / 1e6, metricName: `${this.metric}_sum` }];
      return [];
    });
    return { name: this.metric, help: HISTOGRAMS[this.metric].help, type: 'histogram' as const, aggregator: 'sum' as const, collect: () => undefined, values };
  }
}

export function registerOperatorMetrics(registry: Registry, deps: MetricsDeps): void {
  const { controllerInstance: instance, variantNameLabel } = autoscalerNames(deps.env).names;
  const extra: Labels = instance !== undefined ? { [LABEL.controllerInstance]: instance } : {};
  const vn = (vaKey: string, targetName: string) => variantNameLabelValue(variantNameLabel, vaKey, targetName);
  const gauges = () => readForScrape(() => readOperatorGauges(deps.redis, deps.prefix));
  const counters = () => readForScrape(() => readCounters(deps.redis, deps.prefix));

  for (const def of GAUGES) {
    new Gauge({
      name: def.name,
      help: def.help,
      labelNames: [...def.labelNames, ...Object.keys(extra)],
      registers: [registry],
      async collect() {
        this.reset();
        const g = await gauges();
        if (g === undefined) return;
        for (const { labels, value } of def.values(g, vn)) this.set({ ...labels, ...extra }, value);
      },
    });
  }
  for (const name of Object.keys(COUNTERS) as CounterName[]) {
    new Counter({
      name,
      help: COUNTERS[name].help,
      labelNames: [...COUNTERS[name].labelNames, ...Object.keys(extra)],
      registers: [registry],
      async collect() {
        this.reset();
        for (const r of (await counters()) ?? []) if (r.name === name && r.value > 0) this.inc({ ...r.labels, ...extra }, r.value);
      },
    });
  }
  for (const name of Object.keys(HISTOGRAMS) as HistogramName[]) new StoredHistogram(name, counters, extra, registry);
}
