import { describe, expect, it } from 'vitest';
import { claimReply, fetchReply, finishReply, releaseReply, scheduleReply } from './script-replies.js';

describe('script replies', () => {
  it("accepts schedule()'s answer with RELEASE's extra fields, and refuses an unknown action or a non-string", () => {
    expect(scheduleReply.parse(['added', 'ns/a#3', '0', '0', '2', '400'])).toEqual(['added', 'ns/a#3', '0', '0', '2', '400']);
    expect(() => scheduleReply.parse(['queued', 'ns/a#3', '0', '0'])).toThrow(/schedule\(\)'s answer/);
    expect(() => scheduleReply.parse(['add', 'ns/a#3', 0, '0'])).toThrow();
    expect(() => scheduleReply.parse(['add', 'ns/a#3', '0', '2'])).toThrow();
    expect(() => scheduleReply.parse(['add', 'ns/a#3', '0'])).toThrow();
  });

  it("checks CLAIM's four fields", () => {
    expect(claimReply.parse(['held', 'ns/a#3', '850', ''])).toEqual(['held', 'ns/a#3', '850', '']);
    expect(() => claimReply.parse(['claimed', '12', '0'])).toThrow(/CLAIM's answer/);
    expect(() => claimReply.parse(['taken', '12', '0', ''])).toThrow();
  });

  it('checks every field of RELEASE_AND_FINISH, BullMQ\'s own answer only as an array', () => {
    const next = ['job fields', ['a', 'b'], 7];
    expect(finishReply.parse([next, ['none', '', '0', '0', '0', '0'], ['claimed', '14', '0', '', 'ns/b#9']])[0]).toBe(next);
    expect(finishReply.parse([0, ['stale', '', '0', '0', '0', '0'], []])).toEqual([0, ['stale', '', '0', '0', '0', '0'], []]);
    expect(() => finishReply.parse(['x', [], []])).toThrow(/RELEASE_AND_FINISH/);
    expect(() => finishReply.parse([0, ['none', 1], []])).toThrow();
    expect(() => finishReply.parse([0, [], ['claimed', '14', '0', '']])).toThrow();
    expect(() => finishReply.parse([0, []])).toThrow();
  });

  it('checks MOVE_TO_ACTIVE_AND_CLAIM and RELEASE', () => {
    expect(fetchReply.parse([[], []])).toEqual([[], []]);
    expect(() => fetchReply.parse([0, []])).toThrow(/MOVE_TO_ACTIVE_AND_CLAIM/);
    expect(releaseReply.parse(['stale', '', '0', '0', '0', '0'])).toHaveLength(6);
    expect(() => releaseReply.parse('stale')).toThrow();
  });
});
