// bench/scale.ts's results as Markdown and an SVG plot.
import { round } from '../stats.js';
import type { CompareResult } from './informer-compare.js';
import type { RunResult } from './modelservings.js';
import { renderPanels, type Panel } from './svg.js';

export interface ScaleResults {
  bench: 'scale';
  at: string;
  node: string;
  /** The commit whose Ripple ran. */
  ref: string;
  machine: { cores: number };
  shape: string;
  growth: RunResult[];
  sweep: RunResult[];
  informer: CompareResult[];
}

/** How y grows against x from the first to the last point, as a ratio of the growth in x (1 = linear). */
export function growthExponent(points: Array<[number, number]>): number {
  const first = points[0];
  const last = points[points.length - 1];
  if (!first || !last || first === last || first[1] <= 0) return Number.NaN;
  return round(Math.log(last[1] / first[1]) / Math.log(last[0] / first[0]), 2);
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);

/** The busiest measured process over a run (CPU share of one core), the likely bound. */
export function busiest(run: RunResult): Array<[string, number]> {
  const perRole = new Map<string, number>();
  for (const [name, { cores }] of Object.entries(run.cpu)) {
    const role = name.startsWith('worker-') ? 'workers (sum)' : name;
    perRole.set(role, (perRole.get(role) ?? 0) + cores);
  }
  return [...perRole].sort(([, a], [, b]) => b - a).map(([n, c]) => [n, round(c, 2)]);
}

function runRow(r: RunResult): string {
  return [
    r.modelServings,
    r.workers,
    r.convergeSeconds,
    r.requestsPerObject,
    r.eventWritesPerObject,
    `${r.reconcilesPerObject.untilAvailable} / ${r.reconcilesPerObject.untilQuiet}`,
    `${r.eventToReconcileMs.p50} / ${r.eventToReconcileMs.p99}`,
    `${round(r.redis.usedMemoryDeltaMiB, 1)} (${r.redis.bytesPerObject})`,
    r.redis.keyBytesPerObject,
    `${r.rssMiB.watcher} (${r.rssMiB.watcherPeak})`,
    r.rssMiB.workers.map((w, i) => `${w} (${r.rssMiB.workerPeaks[i]})`).join(', '),
    busiest(r)
      .slice(0, 3)
      .map(([n, c]) => `${n} ${c}`)
      .join(', '),
  ].join(' | ');
}

function cpuPerObject(runs: RunResult[]): string[] {
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.cpu).map((n) => (n.startsWith('worker-') ? 'workers' : n))))];
  const per = (r: RunResult, name: string) =>
    Object.entries(r.cpu)
      .filter(([n]) => (name === 'workers' ? n.startsWith('worker-') : n === name))
      .reduce((a, [, c]) => a + c.seconds, 0) / r.modelServings;
  return [
    `| ModelServings | workers | ${names.join(' | ')} | load average start → end |`,
    `|${' --- |'.repeat(names.length + 3)}`,
    ...runs.map((r) => `| ${r.modelServings} | ${r.workers} | ${names.map((n) => round(per(r, n), 3)).join(' | ')} | ${r.loadAverage.start} → ${r.loadAverage.end} |`),
  ];
}

export function markdown(res: ScaleResults): string {
  const head =
    '| ModelServings | worker processes | s to all Available | API requests / object | Event writes / object | reconciles / object (Available / quiet) | event→reconcile p50 / p99 (ms) | Redis used_memory Δ MiB (bytes / object) | Redis key bytes / object | watcher RSS MiB (peak) | worker RSS MiB (peak) | busiest (cores) |';
  const sep = `|${' --- |'.repeat(12)}`;
  const lines = [
    '# scale',
    '',
    `${res.shape}. Created at once (32 creates in flight) in a fresh namespace; one \`ripple watcher\` and W \`ripple worker\` processes (separate processes, all built-in functions) on the sandbox (KWOK nodes) with the bench's own redis-server; Ripple at ${res.ref}. ${res.at}, Node ${res.node}, ${res.machine.cores} cores shared with other work.`,
    '',
    '## Growth',
    '',
    head,
    sep,
    ...res.growth.map((r) => `| ${runRow(r)} |`),
    '',
  ];
  if (res.growth.length >= 2) {
    const g = (f: (r: RunResult) => number) => growthExponent(res.growth.map((r) => [r.modelServings, f(r)]));
    lines.push(
      'Growth exponent from the smallest to the largest run (1 = linear in N, 0 = constant, >1 = faster than linear):',
      '',
      '| time to Available | API requests | reconciles | event→reconcile p99 | Redis used_memory Δ | watcher RSS | worker RSS |',
      '| --- | --- | --- | --- | --- | --- | --- |',
      `| ${g((r) => r.convergeSeconds)} | ${g((r) => r.requestsPerObject * r.modelServings)} | ${g((r) => r.reconcilesPerObject.untilQuiet * r.modelServings)} | ${g((r) => r.eventToReconcileMs.p99)} | ${g((r) => r.redis.usedMemoryDeltaMiB)} | ${g((r) => r.rssMiB.watcher)} | ${g((r) => mean(r.rssMiB.workers))} |`,
      '',
    );
  }
  if (res.growth.length > 0) {
    lines.push(
      'CPU seconds per ModelServing, from the first create until all Available (the work each part does, whatever share of the machine it got):',
      '',
      ...cpuPerObject(res.growth),
      '',
    );
  }
  if (res.sweep.length > 0) {
    lines.push('## Worker processes', '', head, sep, ...res.sweep.map((r) => `| ${runRow(r)} |`), '');
    lines.push('CPU seconds per ModelServing:', '', ...cpuPerObject(res.sweep), '');
    lines.push('CPU (share of one core) of each process from the first create until all Available:', '');
    const names = [...new Set(res.sweep.flatMap((r) => Object.keys(r.cpu)))];
    lines.push(`| workers | ${names.join(' | ')} | load average start → end |`, `|${' --- |'.repeat(names.length + 2)}`);
    for (const r of res.sweep) lines.push(`| ${r.workers} | ${names.map((n) => r.cpu[n]?.cores ?? '').join(' | ')} | ${r.loadAverage.start} → ${r.loadAverage.end} |`);
    lines.push('');
  }
  if (res.informer.length > 0) {
    lines.push(
      '## Watcher vs client-go informer (Pods, Deployments, Services)',
      '',
      'RSS from /proc/self/status of each process; start = before any watch (Node: runtime and modules loaded), after sync, and after forced GCs; best of two alternating runs.',
      '',
      '| Pods (+ Deployments, Services) | watcher | objects held | RSS start | RSS after sync | RSS after GC | RSS after GC − start, each run | heap after GC | sync ms |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const c of res.informer) {
      for (const b of c.best) {
        // Growth within each sample (not the difference of two bests, which may come from different samples).
        const growth = c.samples.filter((s) => s.variant === b.variant).map((s) => round(s.rssGcMiB - s.rssStartMiB, 1));
        lines.push(`| ${c.pods} (+${c.deployments}, +${c.services}) | ${b.variant} | ${b.objects} | ${b.rssStartMiB} | ${b.rssSyncMiB} | ${b.rssGcMiB} | ${growth.join(', ')} | ${b.heapMiB} | ${b.syncMs} |`);
      }
    }
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

export function plot(res: ScaleResults): string {
  const xs = (f: (r: RunResult) => number) => res.growth.map((r): [number, number] => [r.modelServings, f(r)]);
  const panels: Panel[] = [
    { title: 'Time to all Available', xLabel: 'ModelServings', yLabel: 'seconds', series: [{ name: 'converge', points: xs((r) => r.convergeSeconds) }] },
    {
      title: 'Memory',
      xLabel: 'ModelServings',
      yLabel: 'MiB',
      series: [
        { name: 'watcher RSS', points: xs((r) => r.rssMiB.watcher) },
        { name: 'worker RSS', points: xs((r) => mean(r.rssMiB.workers)) },
        { name: 'Redis used_memory Δ', points: xs((r) => r.redis.usedMemoryDeltaMiB) },
      ],
    },
    {
      title: 'Per ModelServing',
      xLabel: 'ModelServings',
      yLabel: 'count',
      series: [
        { name: 'API requests', points: xs((r) => r.requestsPerObject) },
        { name: 'reconciles (until quiet)', points: xs((r) => r.reconcilesPerObject.untilQuiet) },
      ],
    },
    { title: 'Event→reconcile p99', xLabel: 'ModelServings', yLabel: 'ms', series: [{ name: 'p99', points: xs((r) => r.eventToReconcileMs.p99) }] },
  ];
  if (res.sweep.length > 0) {
    const at = res.sweep[0]?.modelServings ?? 0;
    panels.push({
      title: `${at} ModelServings by worker processes`,
      xLabel: 'worker processes',
      yLabel: 'seconds',
      series: [{ name: 'time to all Available', points: res.sweep.map((r): [number, number] => [r.workers, r.convergeSeconds]) }],
    });
  }
  if (res.informer.length > 0) {
    const variants = [...new Set(res.informer.flatMap((c) => c.best.map((b) => b.variant)))];
    panels.push({
      title: 'Watcher RSS after GC',
      xLabel: 'Pods',
      yLabel: 'MiB',
      series: variants.map((v) => ({ name: v, points: res.informer.map((c): [number, number] => [c.pods, c.best.find((b) => b.variant === v)?.rssGcMiB ?? Number.NaN]) })),
    });
  }
  return renderPanels(panels, 2);
}
