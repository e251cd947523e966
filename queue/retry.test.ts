import { describe, expect, it } from 'vitest';
import { withRetries } from './retry.js';

describe('withRetries', () => {
  const policy = { attempts: 4, baseMs: 100, maxMs: 250 };

  it('repeats a failing step with doubling, capped delays until it succeeds', async () => {
    const waits: number[] = [];
    let calls = 0;
    const result = await withRetries(
      async () => {
        if (++calls < 4) throw new Error(`fail ${calls}`);
        return 'ok';
      },
      policy,
      undefined,
      async (ms) => void waits.push(ms),
    );
    expect(result).toBe('ok');
    expect(waits).toEqual([100, 200, 250]);
  });

  it('gives up after the last attempt with its error, and reports every failure', async () => {
    const seen: Array<[number, number | undefined]> = [];
    let calls = 0;
    const err = await withRetries(
      async () => {
        throw new Error(`fail ${++calls}`);
      },
      policy,
      (_e, attempt, retryInMs) => void seen.push([attempt, retryInMs]),
      async () => undefined,
    ).catch((e: unknown) => e);
    expect((err as Error).message).toBe('fail 4');
    expect(seen).toEqual([
      [1, 100],
      [2, 200],
      [3, 250],
      [4, undefined],
    ]);
  });
});
