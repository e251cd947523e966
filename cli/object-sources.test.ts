import { describe, expect, it } from 'vitest';
import { objectSources } from './object-sources.js';

describe('object view sources', () => {
  it("reads a Pod's operation the way ops-lifecycle does: live IDs and protection finalizers only", () => {
    // Only podOperation is called: no API server or Redis is reached.
    const s = objectSources({ kc: undefined as never, redis: undefined as never, prefix: 'p' });
    const labels = {
      'kusionstack.io/control': 'true',
      'operating.podopslifecycle.kusionstack.io/op-1': '1764300000000000000',
      'operation-type.podopslifecycle.kusionstack.io/op-1': 'update',
    };
    const op = s.podOperation({ labels, finalizers: ['prot.podopslifecycle.kusionstack.io/lb', 'kubernetes.io/other'] });
    expect(op).toMatchObject({ operations: [{ id: 'op-1', type: 'update', operating: true }], finalizers: ['prot.podopslifecycle.kusionstack.io/lb'] });
    expect(s.podOperation({ labels: { 'kusionstack.io/control': 'true' }, finalizers: [] })).toBeUndefined();
    expect(s.podSelector).toBe('kusionstack.io/control=true');
  });
});
