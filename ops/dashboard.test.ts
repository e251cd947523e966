import { describe, expect, it } from 'vitest';
import { REDACTED_STACK, redactStacks } from './dashboard.js';

describe('redactStacks', () => {
  it('replaces every stack, nested anywhere, by the reason and a note; leaves the rest as it is', () => {
    const answer = {
      queues: [
        {
          name: 'q',
          jobs: [
            { id: '1', failedReason: 'quota exceeded', stacktrace: ['UnrecoverableError: quota exceeded\n    at /app/queue/worker.ts:208:13'], data: { key: 'ns/a' } },
            { id: '2', stacktrace: [] },
          ],
        },
      ],
    };
    const out = JSON.stringify(redactStacks(answer));
    expect(out).not.toContain('worker.ts');
    expect(redactStacks(answer)).toEqual({
      queues: [{ name: 'q', jobs: [{ id: '1', failedReason: 'quota exceeded', stacktrace: [`quota exceeded\n\n(${REDACTED_STACK})`], data: { key: 'ns/a' } }, { id: '2', stacktrace: [] }] }],
    });
  });
});
