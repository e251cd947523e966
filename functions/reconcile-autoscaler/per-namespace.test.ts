import { describe, expect, it } from 'vitest';
import { listPerNamespace } from './per-namespace.js';

describe('listPerNamespace (issue 14 scenario 9: one failing namespace list does not abort the cycle)', () => {
  it('lists every namespace it can and reports the one that failed', async () => {
    const r = await listPerNamespace(['a', 'b', 'c'], (ns) => (ns === 'b' ? Promise.reject(new Error('deployments is forbidden in b')) : Promise.resolve([`${ns}-1`, `${ns}-2`])));
    expect([...r.items]).toEqual([
      ['a', ['a-1', 'a-2']],
      ['c', ['c-1', 'c-2']],
    ]);
    expect([...r.failed]).toEqual([['b', 'deployments is forbidden in b']]);
  });
});
