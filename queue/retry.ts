/** A few quick attempts for a step whose failure would lose work (a Redis blip between two calls). */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Delay after the first failure, doubling per attempt. */
  baseMs: number;
  maxMs: number;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `step` until it succeeds or `policy.attempts` are used up; rejects with the last error.
 * `onFailure` sees each failure and the delay before the next attempt (undefined after the last).
 * Only for steps that are safe to repeat.
 */
export async function withRetries<T>(
  step: () => Promise<T>,
  policy: RetryPolicy,
  onFailure: (err: unknown, attempt: number, retryInMs: number | undefined) => void = () => undefined,
  wait: (ms: number) => Promise<void> = sleep,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      const last = attempt >= policy.attempts;
      const delay = last ? undefined : Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
      onFailure(err, attempt, delay);
      if (delay === undefined) throw err;
      await wait(delay);
    }
  }
}
