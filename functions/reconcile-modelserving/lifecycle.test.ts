import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CONTROL_LABEL, SERVICE_READY_CONDITION } from '../ops-lifecycle/client/index.js';
import { deletionInProgress, enrolled, LIFECYCLE_OPT_IN_ANNOTATION, lifecycleOptedIn, maskLifecycleDeletions } from './lifecycle.js';

const NOW = new Date('2026-01-01T00:00:00Z');

function pod(name: string, labels: Record<string, string> = {}, deleting = false): V1Pod {
  return {
    metadata: { name, uid: `uid-${name}`, labels, ...(deleting ? { deletionTimestamp: NOW } : {}) },
    spec: { containers: [{ name: 'main', image: 'i' }] },
  };
}

const begun = {
  'operating.podopslifecycle.kusionstack.io/modelserving': '1',
  'operation-type.podopslifecycle.kusionstack.io/modelserving': 'delete',
};

describe('PodOpsLifecycle opt-in', () => {
  it('is read from the ModelServing annotation', () => {
    expect(lifecycleOptedIn({ metadata: { name: 'a', annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'true' } } })).toBe(true);
    expect(lifecycleOptedIn({ metadata: { name: 'a', annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'True' } } })).toBe(true);
    expect(lifecycleOptedIn({ metadata: { name: 'a', annotations: { [LIFECYCLE_OPT_IN_ANNOTATION]: 'no' } } })).toBe(false);
    expect(lifecycleOptedIn({ metadata: { name: 'a' } })).toBe(false);
  });

  it('enrols pods it creates only when opted in', () => {
    const p = pod('p', { app: 'x' });
    expect(enrolled(p, false)).toBe(p);
    const e = enrolled(p, true);
    expect(e.metadata?.labels).toEqual({ app: 'x', [CONTROL_LABEL]: 'true' });
    expect(e.spec?.readinessGates).toEqual([{ conditionType: SERVICE_READY_CONDITION }]);
  });

  it('shows pods whose deletion it began as terminating, and lists them to drive on', () => {
    const pods = [pod('keep'), pod('going', begun), pod('gone', begun, true), pod('other-id', { 'operating.podopslifecycle.kusionstack.io/upgrader': '1' })];
    const { pods: seen, pending } = maskLifecycleDeletions(pods, NOW);
    expect(pending).toEqual([{ name: 'going', uid: 'uid-going' }]);
    expect(seen.map((p) => Boolean(p.metadata?.deletionTimestamp))).toEqual([false, true, true, false]);
    expect(pods[1]?.metadata?.deletionTimestamp).toBeUndefined(); // the input is left alone
  });

  it('counts only its own ID running a delete', () => {
    expect(deletionInProgress(pod('a', begun))).toBe(true);
    expect(deletionInProgress(pod('a', { ...begun, 'operation-type.podopslifecycle.kusionstack.io/modelserving': 'update' }))).toBe(false);
  });
});
