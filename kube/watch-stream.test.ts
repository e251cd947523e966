import { describe, expect, it } from 'vitest';
import { LineSplitter } from './watch-stream.js';

describe('LineSplitter', () => {
  it('cuts lines at newlines and keeps a partial line for the next chunk', () => {
    const s = new LineSplitter();
    expect(s.push(Buffer.from('{"a":1}\n{"b":'))).toEqual(['{"a":1}']);
    expect(s.buffered).toBe(5);
    expect(s.push(Buffer.from('2}\n'))).toEqual(['{"b":2}']);
    expect(s.buffered).toBe(0);
  });

  it('decodes a multi-byte character split across chunks whole', () => {
    const line = Buffer.from('{"name":"größe-模型"}\n');
    // Split inside the 3-byte '模': every cut point must give back the same text.
    for (let cut = 1; cut < line.length; cut++) {
      const s = new LineSplitter();
      const got = [...s.push(line.subarray(0, cut)), ...s.push(line.subarray(cut))];
      expect(got).toEqual(['{"name":"größe-模型"}']);
    }
  });

  it('gives every line of a chunk that carries many, and skips empty ones', () => {
    const s = new LineSplitter();
    expect(s.push(Buffer.from('1\n\n2\n3\n'))).toEqual(['1', '2', '3']);
  });
});
