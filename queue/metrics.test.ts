import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { QueueMetrics } from './metrics.js';

/** One sample's value from the registry's exposition text, or undefined when the series is absent. */
async function sample(registry: Registry, series: string): Promise<number | undefined> {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('QueueMetrics: the in-progress gauges (client-go workqueue names)', () => {
  it('workqueue_unfinished_work_seconds sums, and workqueue_longest_running_processor_seconds is the oldest of, the reconciles running now', async () => {
    let now = 1_000_000;
    const registry = new Registry();
    const m = new QueueMetrics(registry, () => now);
    const unfinished = 'workqueue_unfinished_work_seconds{name="fn",controller="fn"}';
    const longest = 'workqueue_longest_running_processor_seconds{name="fn",controller="fn"}';
    // Nothing ran yet: no series.
    expect(await sample(registry, unfinished)).toBeUndefined();

    const first = m.startProcessing('fn');
    now += 3_000;
    const second = m.startProcessing('fn');
    now += 2_000;
    // 5 s and 2 s in progress.
    expect(await sample(registry, unfinished)).toBe(7);
    expect(await sample(registry, longest)).toBe(5);
    expect(await sample(registry, 'controller_runtime_active_workers{controller="fn"}')).toBe(2);

    // The older one ends: the longest is now the younger one's age.
    first();
    first();
    expect(await sample(registry, unfinished)).toBe(2);
    expect(await sample(registry, longest)).toBe(2);
    expect(await sample(registry, 'controller_runtime_active_workers{controller="fn"}')).toBe(1);

    second();
    now += 60_000;
    // Idle: zero, as client-go reports an idle queue, not a vanished series.
    expect(await sample(registry, unfinished)).toBe(0);
    expect(await sample(registry, longest)).toBe(0);
    expect(await sample(registry, 'controller_runtime_active_workers{controller="fn"}')).toBe(0);
  });

  it('functions are kept apart', async () => {
    let now = 0;
    const registry = new Registry();
    const m = new QueueMetrics(registry, () => now);
    m.startProcessing('a');
    now += 1_500;
    const b = m.startProcessing('b');
    now += 500;
    expect(await sample(registry, 'workqueue_longest_running_processor_seconds{name="a",controller="a"}')).toBe(2);
    expect(await sample(registry, 'workqueue_longest_running_processor_seconds{name="b",controller="b"}')).toBe(0.5);
    b();
    expect(await sample(registry, 'workqueue_unfinished_work_seconds{name="b",controller="b"}')).toBe(0);
    expect(await sample(registry, 'workqueue_unfinished_work_seconds{name="a",controller="a"}')).toBe(2);
  });
});

describe('QueueMetrics: series that exist before the first reconcile', () => {
  it("a tracked queue's reconcile counters start at zero, so increase() counts the first reconcile", async () => {
    const registry = new Registry();
    const m = new QueueMetrics(registry);
    m.trackDepth('fn', async () => 0);
    for (const result of ['success', 'error', 'requeue_after']) expect(await sample(registry, `controller_runtime_reconcile_total{controller="fn",result="${result}"}`)).toBe(0);
    expect(await sample(registry, 'controller_runtime_reconcile_errors_total{controller="fn"}')).toBe(0);
    m.reconcileTotal.inc({ controller: 'fn', result: 'success' });
    expect(await sample(registry, 'controller_runtime_reconcile_total{controller="fn",result="success"}')).toBe(1);
  });
});
