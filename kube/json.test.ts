import { describe, expect, it } from 'vitest';
import { asRecord, parseJson, sortedJson } from './json.js';

describe('kube/json', () => {
  it('sortedJson ignores key order at every depth but not array order', () => {
    expect(sortedJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
    expect(sortedJson({ a: { x: 1, y: 2 } })).toBe(sortedJson({ a: { y: 2, x: 1 } }));
    expect(sortedJson([1, 2])).not.toBe(sortedJson([2, 1]));
    expect(sortedJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(sortedJson(undefined)).toBe('undefined');
  });

  it('parseJson answers undefined for text that is not JSON', () => {
    expect(parseJson('{"a":1}')).toEqual({ a: 1 });
    expect(parseJson('{not json')).toBeUndefined();
    expect(parseJson('null')).toBeNull();
  });

  it('asRecord takes plain objects only', () => {
    expect(asRecord({ a: 1 })).toEqual({ a: 1 });
    expect(asRecord([1])).toBeUndefined();
    expect(asRecord(null)).toBeUndefined();
    expect(asRecord('x')).toBeUndefined();
  });
});
