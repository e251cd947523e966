import { describe, expect, it } from 'vitest';
import { formatPrometheusDuration, parseGoDuration } from './duration.js';

describe('parseGoDuration', () => {
  it.each([
    ['60s', 60_000],
    ['1m', 60_000],
    ['1m30s', 90_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    ['2h45m', 9_900_000],
    ['1500us', 1.5],
    ['0', 0],
    ['+10s', 10_000],
    ['-1s', -1_000],
    ['.5s', 500],
    ['1.s', 1_000],
  ])('%s → %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each([[''], ['60'], ['s'], ['1d'], ['1 m'], ['abc'], ['1m x'], ['.s'], ['--1s'], ['1M']])('rejects %j', (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});

describe('formatPrometheusDuration', () => {
  it.each([
    [600_000, '10m'],
    [5_400_000, '1h30m'],
    [90_000, '1m30s'],
    [1_500, '1s500ms'],
    [0, '1ms'],
  ])('%d ms → %s', (ms, text) => {
    expect(formatPrometheusDuration(ms)).toBe(text);
  });
});
