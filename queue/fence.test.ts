import { describe, expect, it } from 'vitest';
import { activeEntry, parseActiveEntry } from './fence.js';
import { parseClaim } from './worker.js';

describe('fencing', () => {
  it('active entries carry the token before the job id (job ids contain "#", keys "/")', () => {
    expect(parseActiveEntry(activeEntry('42', 'ns/a#7'))).toEqual({ token: '42', jobId: 'ns/a#7' });
    expect(parseActiveEntry('ns/a#7')).toBeUndefined();
    expect(parseActiveEntry(null)).toBeUndefined();
  });
  it("reads CLAIM's verdicts", () => {
    expect(parseClaim(['claimed', '12', '0', ''])).toEqual({ verdict: 'claimed', token: '12' });
    // The resourceVersion the key was woken at, when an event of its object carried one.
    expect(parseClaim(['claimed', '12', '0', '4711'])).toEqual({ verdict: 'claimed', token: '12', minResourceVersion: '4711' });
    expect(parseClaim(['held', 'ns/a#3', '850', ''])).toEqual({ verdict: 'held', delayMs: 850 });
    expect(parseClaim(['reschedule', 'ns/a#2', '400', ''])).toEqual({ verdict: 'reschedule', jobId: 'ns/a#2', delayMs: 400 });
    expect(parseClaim(['skip', '', '0', ''])).toEqual({ verdict: 'skip' });
    expect(() => parseClaim([1])).toThrow();
  });
});
