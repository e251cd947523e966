/** A promise given up on after a deadline. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
}

/**
 * Settles like `work`, or rejects with DeadlineExceededError after `ms` (no bound when `ms` is not a
 * positive finite number). `work` is not cancelled — a promise cannot be — only no longer waited for;
 * its eventual rejection is still observed here, so it never becomes an unhandled rejection.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, message: () => string): Promise<T> {
  if (!(ms > 0) || !Number.isFinite(ms)) return work;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceededError(message())), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
