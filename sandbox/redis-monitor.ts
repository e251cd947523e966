import type { Redis } from 'ioredis';

/**
 * MONITOR on a connection of its own, for the tests and benchmarks that count what clients send.
 *
 * Not ioredis's `monitor()`: it marks its connection as monitoring one microtask after Redis's OK, so on a busy
 * server the monitor lines that arrive in the same read as that OK reach an empty command queue and ioredis emits
 * "Command queue state error" on a connection nobody can listen on yet: an uncaught exception (it failed
 * test/integration/emit-events-recorder.test.ts in a CI run). Here the listener is on before the connection opens,
 * and those lines, which come before anything a caller marks and waits for, are dropped.
 */
export async function startMonitor(client: Redis): Promise<Redis> {
  const monitor = client.duplicate({ monitor: true, lazyConnect: true });
  monitor.on('error', (err: Error) => {
    if (err.message.startsWith('Command queue state error')) return;
    // Counting callers then miss commands and say so in their own assertions; this says why.
    process.stderr.write(`redis MONITOR connection: ${err.message}\n`);
  });
  // Not events.once: it would reject on the very error this drops.
  const monitoring = new Promise<void>((resolve) => monitor.once('monitoring', () => resolve()));
  await monitor.connect();
  await monitoring;
  return monitor;
}
