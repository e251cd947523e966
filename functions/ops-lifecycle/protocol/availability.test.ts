import { describe, expect, it } from 'vitest';
import { perIdKey } from './keys.js';
import { podState } from './pod-state.js';
import { allowedUnavailable, availabilityAllows, parseBudget, postCheckPasses } from './availability.js';

const ready = (labels: Record<string, string> = {}) => podState({ labels, conditions: [{ type: 'Ready', status: 'True' }] });
const notReady = () => podState({ conditions: [{ type: 'Ready', status: 'False' }] });
const preparing = () => ready({ [perIdKey('operating', 'a')]: '1', [perIdKey('preChecked', 'a')]: '1', [perIdKey('preparing', 'a')]: '1' });

describe('availability budget', () => {
  it('parses a count or a percentage, and says what is wrong otherwise', () => {
    expect(parseBudget(undefined)).toEqual({ ok: true });
    expect(parseBudget('1')).toEqual({ ok: true, budget: { kind: 'count', value: 1 } });
    expect(parseBudget('25%')).toEqual({ ok: true, budget: { kind: 'percent', value: 25 } });
    expect(parseBudget('one')).toMatchObject({ ok: false, error: expect.stringContaining('neither a count') });
    expect(parseBudget('150%')).toMatchObject({ ok: false });
  });
  it('rounds a percentage down, never below 1', () => {
    expect(allowedUnavailable({ kind: 'percent', value: 25 }, 8)).toBe(2);
    expect(allowedUnavailable({ kind: 'percent', value: 10 }, 3)).toBe(1);
  });
  it('holds a Pod while the owner already has the budget out of service', () => {
    const budget = { kind: 'count' as const, value: 1 };
    expect(availabilityAllows({ pod: ready(), siblings: [ready(), ready()], budget }).allowed).toBe(true);
    expect(availabilityAllows({ pod: ready(), siblings: [preparing(), ready()], budget }).allowed).toBe(false);
    expect(availabilityAllows({ pod: ready(), siblings: [notReady(), ready()], budget }).allowed).toBe(false);
    // Already out of service: taking it costs nothing.
    expect(availabilityAllows({ pod: notReady(), siblings: [preparing(), ready()], budget }).allowed).toBe(true);
  });
  it('post-check waits for the containers to be ready again', () => {
    expect(postCheckPasses(podState({ conditions: [{ type: 'ContainersReady', status: 'False' }] }))).toBe(false);
    expect(postCheckPasses(podState({ conditions: [{ type: 'ContainersReady', status: 'True' }] }))).toBe(true);
  });
});
