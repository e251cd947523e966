import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { readForScrape } from './scrape.js';

// controller-runtime's bucket layout, so existing dashboards read Ripple's histograms unchanged.
const WORK_BUCKETS = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000];
const RECONCILE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60];

export type ReconcileResultLabel = 'success' | 'error' | 'requeue_after' | 'skipped';

/**
 * The work-queue and controller metrics under controller-runtime's names and labels
 * (`name`/`controller` = the function). One instance per process and registry: no module-level state.
 */
export class QueueMetrics {
  readonly adds: Counter<'name' | 'controller'>;
  readonly retries: Counter<'name' | 'controller'>;
  readonly queueDuration: Histogram<'name' | 'controller'>;
  readonly workDuration: Histogram<'name' | 'controller'>;
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly terminalErrors: Counter<'controller'>;
  readonly reconcileTimeouts: Counter<'controller'>;
  readonly reconcileTime: Histogram<'controller'>;
  readonly activeWorkers: Gauge<'controller'>;
  readonly maxConcurrent: Gauge<'controller'>;
  private readonly depthSources = new Map<string, () => Promise<number>>();
  /** Start times (ms) of the reconciles running now, per function: what the two in-progress gauges read. */
  private readonly running = new Map<string, Set<{ startedAt: number }>>();

  /** `now` is the clock the in-progress gauges read (a test's fake one). */
  constructor(
    readonly registry: Registry,
    private readonly now: () => number = Date.now,
  ) {
    const registers = [registry];
    const depthSources = this.depthSources;
    const running = this.running;
    const clock = now;
    // client-go's in-progress gauges: a reconcile that hangs shows here long before it ends in
    // workqueue_work_duration_seconds. Read at scrape time; a function that ran once keeps a 0 series.
    // Each sets, per function, a number of seconds folded from the running reconciles' ages (ms).
    const inProgress = (name: string, help: string, fold: (ages: number[]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['name', 'controller'],
        registers,
        collect() {
          this.reset();
          const at = clock();
          for (const [fn, set] of running) this.set({ name: fn, controller: fn }, fold([...set].map((r) => Math.max(0, at - r.startedAt))) / 1000);
        },
      });
    inProgress(
      'workqueue_unfinished_work_seconds',
      "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
      (ages) => ages.reduce((sum, age) => sum + age, 0),
    );
    inProgress('workqueue_longest_running_processor_seconds', 'How many seconds has the longest running processor for workqueue been running.', (ages) => Math.max(0, ...ages));
    new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue: keys waiting or delayed',
      labelNames: ['name', 'controller'],
      registers,
      async collect() {
        this.reset();
        const sources = [...depthSources];
        // A queue whose depth cannot be read in time (Redis down) is left out rather than hanging the scrape.
        const depths = await Promise.all(sources.map(([, depth]) => readForScrape(depth)));
        sources.forEach(([name], i) => {
          const depth = depths[i];
          if (depth !== undefined) this.set({ name, controller: name }, depth);
        });
      },
    });
    this.adds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name', 'controller'], registers });
    this.retries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name', 'controller'], registers });
    this.queueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name', 'controller'],
      buckets: WORK_BUCKETS,
      registers,
    });
    this.workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames: ['name', 'controller'],
      buckets: WORK_BUCKETS,
      registers,
    });
    this.reconcileTotal = new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'], registers });
    this.reconcileErrors = new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: ['controller'], registers });
    this.terminalErrors = new Counter({ name: 'controller_runtime_terminal_reconcile_errors_total', help: 'Total number of terminal reconciliation errors per controller', labelNames: ['controller'], registers });
    this.reconcileTimeouts = new Counter({
      name: 'controller_runtime_reconcile_timeouts_total',
      help: 'Total number of reconciliations given up on after the reconcile timeout, per controller (retried with backoff)',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.activeWorkers = new Gauge({ name: 'controller_runtime_active_workers', help: 'Number of currently used workers per controller', labelNames: ['controller'], registers });
    this.maxConcurrent = new Gauge({ name: 'controller_runtime_max_concurrent_reconciles', help: 'Maximum number of concurrent reconciles per controller', labelNames: ['controller'], registers });
  }

  /**
   * A reconcile of `controller` starts: counted in controller_runtime_active_workers and in the two
   * in-progress gauges until the returned function is called (once; later calls do nothing).
   */
  startProcessing(controller: string): () => void {
    const entry = { startedAt: this.now() };
    let set = this.running.get(controller);
    if (!set) this.running.set(controller, (set = new Set()));
    set.add(entry);
    this.activeWorkers.inc({ controller });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      set.delete(entry);
      this.activeWorkers.dec({ controller });
    };
  }

  /** Registers how to read a queue's depth when /metrics is scraped. */
  trackDepth(name: string, depth: () => Promise<number>): void {
    this.depthSources.set(name, depth);
    // Zero series from the start, as controller-runtime initialises them: a counter that appears at its
    // first reconcile shows no increase() for it, so a short-lived worker pod (KEDA, Knative) whose few
    // reconciles were all "first" would look idle to RippleQueueNotDraining (infra/alerts).
    for (const result of ['success', 'error', 'requeue_after'] as const) this.reconcileTotal.inc({ controller: name, result }, 0);
    this.reconcileErrors.inc({ controller: name }, 0);
  }
}
