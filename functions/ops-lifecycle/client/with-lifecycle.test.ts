import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CONTROL_LABEL, SERVICE_READY_CONDITION } from '../protocol/index.js';
import { withLifecycle } from './with-lifecycle.js';

describe('withLifecycle', () => {
  it('adds the control label and the service-ready gate, keeping what is there', () => {
    const pod: V1Pod = {
      metadata: { name: 'p', labels: { app: 'x' } },
      spec: { containers: [{ name: 'c', image: 'i' }], readinessGates: [{ conditionType: 'other' }] },
    };
    const out = withLifecycle(pod);
    expect(out.metadata).toEqual({ name: 'p', labels: { app: 'x', [CONTROL_LABEL]: 'true' } });
    expect(out.spec?.readinessGates).toEqual([{ conditionType: 'other' }, { conditionType: SERVICE_READY_CONDITION }]);
    expect(out.spec?.containers).toEqual([{ name: 'c', image: 'i' }]);
    // the input is left alone
    expect(pod.metadata?.labels).toEqual({ app: 'x' });
    expect(pod.spec?.readinessGates).toHaveLength(1);
  });

  it('is idempotent and fills in a bare object', () => {
    const once = withLifecycle({});
    expect(withLifecycle(once)).toEqual(once);
    expect(once).toEqual({ metadata: { labels: { [CONTROL_LABEL]: 'true' } }, spec: { readinessGates: [{ conditionType: SERVICE_READY_CONDITION }] } });
  });
});
