import { describe, expect, it } from 'vitest';
import { podEndpointsOf } from './endpoint-slices.js';

const slice = (conditions: Record<string, boolean> | undefined) => ({
  metadata: { name: 's' },
  endpoints: [{ ...(conditions ? { conditions } : {}), targetRef: { kind: 'Pod', name: 'p', uid: 'u' } }],
});

describe('podEndpointsOf', () => {
  it.each<{ conditions: Record<string, boolean> | undefined; ready: boolean | undefined }>([
    { conditions: undefined, ready: undefined },
    { conditions: { ready: true }, ready: true },
    { conditions: { ready: false }, ready: false },
    // publishNotReadyAddresses: ready stays true, serving follows the Pod.
    { conditions: { ready: true, serving: false }, ready: false },
    // terminating: not ready for new connections while still serving.
    { conditions: { ready: false, serving: true, terminating: true }, ready: false },
  ])('conditions $conditions → ready $ready', ({ conditions, ready }) => {
    const [e] = podEndpointsOf(slice(conditions));
    expect(e?.ready).toBe(ready);
    expect(e?.podName).toBe('p');
  });
});
