import { describe, expect, it } from 'vitest';
import { keepVersion } from './resource-version-order.js';

describe('keepVersion', () => {
  it('keeps the highest of the versions that woke a key, in any order of arrival', () => {
    const fold = (versions: string[]) => versions.reduce<string | undefined>((cur, v) => keepVersion(cur, v), undefined);
    expect(fold(['5', '12', '9'])).toBe('12');
    expect(fold(['12', '9', '5'])).toBe('12');
    expect(fold(['9', '5', '12'])).toBe('12');
  });

  it('orders by length first, so 10 is newer than 9 (not the lexicographic order)', () => {
    expect(keepVersion('9', '10')).toBe('10');
    expect(keepVersion('10', '9')).toBe('10');
    expect(keepVersion('199', '1000')).toBe('1000');
  });

  it('is exact past 2^53, where doubles (and Lua numbers) cannot tell neighbours apart', () => {
    // 2^53 + 1 and 2^53 + 2 round to the same double.
    expect(Number('9007199254740993')).toBe(Number('9007199254740992'));
    expect(keepVersion('9007199254740993', '9007199254740992')).toBe('9007199254740993');
    expect(keepVersion('9007199254740992', '9007199254740993')).toBe('9007199254740993');
    expect(keepVersion('18446744073709551615', '18446744073709551614')).toBe('18446744073709551615');
  });

  it('keeps an equal version', () => {
    expect(keepVersion('12', '12')).toBe('12');
  });

  it('keeps the one that arrived last when either cannot be ordered', () => {
    expect(keepVersion('12', 'abc')).toBe('abc');
    expect(keepVersion('abc', '5')).toBe('5');
    expect(keepVersion('abc', 'xyz')).toBe('xyz');
    expect(keepVersion('-3', '2')).toBe('2');
    expect(keepVersion('1e3', '5')).toBe('5');
    // Leading zeros are not how etcd writes a revision: '009' is opaque, not 9 (nor above 10).
    expect(keepVersion('10', '009')).toBe('009');
    expect(keepVersion('009', '10')).toBe('10');
  });

  it('takes the first version a key gets', () => {
    expect(keepVersion(undefined, '7')).toBe('7');
  });
});

describe('keepVersion with no version', () => {
  it('an empty version changes nothing (the script ignores it too)', () => {
    expect(keepVersion('12', '')).toBe('12');
    expect(keepVersion(undefined, '')).toBeUndefined();
  });
});
