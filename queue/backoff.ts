/** Per-key exponential backoff, client-go's ItemExponentialFailureRateLimiter: base·2^(failures-1), capped. */
export interface BackoffPolicy {
  /** Delay after the first failure (client-go: 5 ms). */
  baseMs: number;
  /** Upper bound (client-go: 1000 s). */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 5, maxMs: 1_000_000 };

export function backoffDelay(policy: BackoffPolicy, failures: number): number {
  if (failures <= 0) return 0;
  // 2^exp overflows to Infinity long after the cap; clamp the exponent so the math stays finite.
  const exp = Math.min(failures - 1, 62);
  return Math.min(policy.maxMs, policy.baseMs * 2 ** exp);
}
