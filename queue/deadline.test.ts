import { describe, expect, it } from 'vitest';
import { DeadlineExceededError, withDeadline } from './deadline.js';

describe('withDeadline', () => {
  it('settles like the work when it finishes in time', async () => {
    await expect(withDeadline(Promise.resolve(7), 1_000, () => 'late')).resolves.toBe(7);
    await expect(withDeadline(Promise.reject(new Error('boom')), 1_000, () => 'late')).rejects.toThrow('boom');
  });

  it('rejects with DeadlineExceededError when the work never finishes', async () => {
    const never = new Promise<number>(() => undefined);
    const err = await withDeadline(never, 20, () => 'reconcile did not finish within 20 ms').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeadlineExceededError);
    expect((err as Error).message).toBe('reconcile did not finish within 20 ms');
  });

  it('has no bound when the deadline is 0', async () => {
    const work = new Promise<string>((resolve) => setTimeout(() => resolve('done'), 30));
    await expect(withDeadline(work, 0, () => 'late')).resolves.toBe('done');
  });
});
