/**
 * The wva_* gauges on the process registry /metrics serves. Their values are read from Redis at
 * scrape time, not set in memory: a decision written by any worker shows on every process (so an
 * HPA reading any replica sees the same value), and a series removed from Redis (target or VA gone)
 * disappears from every process at its next scrape.
 */
import { Gauge, type Registry } from 'prom-client';
import { readForScrape } from '../../../queue/scrape.js';
import type { MetricsDeps } from '../../../runtime/function.js';
import { autoscalerNames } from '../config/names.js';
import { readAllSeries, readCycleRecord } from '../state.js';
import { registerOperatorMetrics } from './operator-collector.js';
import { LABEL, LAST_OPTIMIZATION_HELP, LAST_OPTIMIZATION_METRIC, METRIC, METRIC_HELP, metricLabelNames, replicaSeries, variantNameLabelValue, type MetricName } from './series.js';

export function registerAutoscalerMetrics(registry: Registry, deps: MetricsDeps): void {
  const { controllerInstance: instance, variantNameLabel } = autoscalerNames(deps.env).names;
  const labelNames = metricLabelNames(instance);
  for (const name of Object.values(METRIC) as MetricName[]) {
    new Gauge({
      name,
      help: METRIC_HELP[name],
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        // Bounded: with Redis down the read would wait for ever and hang /metrics. No series then,
        // rather than stale ones: an HPA must not act on a decision it cannot confirm.
        const series = await readForScrape(() => readAllSeries(deps.redis, deps.prefix));
        for (const { vaKey, record } of series ?? []) {
          const key = { variantName: variantNameLabelValue(variantNameLabel, vaKey, record.variantName), namespace: record.namespace, accelerator: record.accelerator, ...(instance !== undefined ? { controllerInstance: instance } : {}) };
          for (const s of replicaSeries(key, record.current, record.desired)) if (s.name === name) this.set(s.labels, s.value);
        }
      },
    });
  }
  new Gauge({
    name: LAST_OPTIMIZATION_METRIC,
    help: LAST_OPTIMIZATION_HELP,
    labelNames: instance !== undefined ? [LABEL.controllerInstance] : [],
    registers: [registry],
    async collect() {
      this.reset();
      const record = await readForScrape(() => readCycleRecord(deps.redis, deps.prefix));
      const at = record ? Date.parse(record.at) : NaN;
      if (!Number.isFinite(at)) return;
      if (instance !== undefined) this.set({ [LABEL.controllerInstance]: instance }, at / 1000);
      else this.set(at / 1000);
    },
  });
  registerOperatorMetrics(registry, deps);
}
