import type { FunctionDefinition } from '../../runtime/function.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { Watcher } from '../../watcher/watcher.js';
import type { TestSandbox } from './sandbox.js';

export interface RunningRipple {
  host: FunctionHost;
  watcher: Watcher;
  stop(): Promise<void>;
}

/**
 * Runs the given functions in this test process the way `ripple all` does — a watcher (always leader)
 * and workers — against the sandbox's real API server and Redis, confined to the test's namespace
 * and Redis prefix so concurrent tests never reconcile each other's objects.
 */
export async function startRipple(
  sb: TestSandbox,
  functions: FunctionDefinition[],
  opts: { env?: Record<string, string>; workers?: boolean; logLevel?: string } = {},
): Promise<RunningRipple> {
  const log = createLogger(`test-${sb.namespace}`, opts.logLevel ?? process.env.LOG_LEVEL ?? 'warn');
  const host = new FunctionHost({
    kc: sb.kc,
    redisUrl: sb.redisUrl,
    prefix: sb.prefix,
    functions,
    log,
    env: { ...process.env, ...opts.env },
    namespace: sb.namespace,
    lockDurationMs: 5_000,
    stalledIntervalMs: 2_000,
  });
  const watcher = new Watcher({
    kc: sb.kc,
    functions,
    enqueue: async (fn, key, reason, resourceVersion) => void (await host.enqueue(fn, key, reason, 0, resourceVersion)),
    isLeader: () => true,
    log,
    namespace: sb.namespace,
  });
  if (opts.workers !== false) host.startWorkers();
  watcher.start();
  try {
    await watcher.waitForSync(60_000);
  } catch (err) {
    // The caller gets no handle to stop them: close what started, or its watches and workers run on.
    await watcher.stop();
    await host.close();
    throw err;
  }
  return {
    host,
    watcher,
    stop: async () => {
      await watcher.stop();
      await host.close();
    },
  };
}
