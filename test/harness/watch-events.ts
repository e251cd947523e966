import type { KubeConfig } from '@kubernetes/client-node';
import { openWatch, type WatchStreamOptions } from '../../kube/watch-stream.js';

/**
 * Every event of one watch from now until `abort()`, for the records and negative checks tests keep. It is
 * Ripple's own watch request (kube/watch-stream.ts), not client-node's `Watch`: since client-node 2.x that one
 * ends a watch after 30 s without data (a quiet namespace; bookmarks come about once a minute) and says so only
 * to its `done` callback, so a record would stop there and a negative check would pass on what it never saw.
 *
 * Resolves once the API server has accepted the watch, so what the test does next is seen; a refusal is this
 * call's error. A watch that ends before `abort()` (a dropped connection, the server's timeout of 30 min or
 * more) or an `onEvent` that throws is an uncaught error of the test run, never a silent stop.
 */
export async function watchEvents<T = unknown>(
  kc: KubeConfig,
  path: string,
  query: WatchStreamOptions['query'],
  onEvent: (type: string, object: T) => void,
): Promise<{ abort(): void }> {
  let stopped = false;
  let opened = false;
  let failure: unknown;
  let accepted: () => void = () => undefined;
  const open = new Promise<void>((resolve) => (accepted = resolve));
  const stream = openWatch(kc, {
    path,
    query,
    headerTimeoutMs: 30_000,
    onOpen: () => {
      opened = true;
      accepted();
    },
    onLine: (type, object) => {
      if (failure !== undefined) return;
      try {
        onEvent(type, object as T);
      } catch (err) {
        failure = err;
        stream.abort();
      }
    },
    onUnreadable: (reason) => {
      failure ??= new Error(`the watch of ${path} sent a line that is not an event: ${reason}`);
      stream.abort();
    },
  });
  const ended = stream.done.then(() => {
    if (failure !== undefined) throw failure;
    if (!stopped) throw new Error(`the watch of ${path} ended before the test stopped it`);
  });
  ended.catch((err: unknown) => {
    if (opened) {
      // After the call returned nobody awaits the watch: the error surfaces as the run's own.
      queueMicrotask(() => {
        throw err;
      });
    }
  });
  await Promise.race([open, ended]);
  return {
    abort: () => {
      stopped = true;
      stream.abort();
    },
  };
}
