import { withDeadline } from './deadline.js';

/**
 * How long a /metrics collector waits for Redis. ioredis queues commands while disconnected (the
 * workers need that), so an unbounded read hangs the whole scrape for as long as Redis is down; a
 * scrape that answers without those series is better than one that never answers (ops/health.ts
 * bounds its PING the same way).
 */
export const SCRAPE_TIMEOUT_MS = 2_000;

/** `read()`'s value, or undefined when it failed or did not answer within the timeout: report nothing then. */
export async function readForScrape<T>(read: () => Promise<T>, timeoutMs = SCRAPE_TIMEOUT_MS): Promise<T | undefined> {
  try {
    return await withDeadline(read(), timeoutMs, () => `no answer within ${timeoutMs} ms`);
  } catch {
    return undefined;
  }
}
