import { describe, expect, it } from 'vitest';
import { table } from './table.js';

describe('table', () => {
  it('aligns columns under capitalised headers; empty cells show a dash', () => {
    expect(table(['queue', 'waiting', 'workers'], [['reconcile-modelserving', 3, 1], ['emit-events', 0, null]])).toBe(
      ['QUEUE                   WAITING  WORKERS', 'reconcile-modelserving  3        1', 'emit-events             0        -'].join('\n'),
    );
  });
});
