import type { V1Pod } from '@kubernetes/client-node';
import type { ModelServing } from '../../api/modelserving.js';
import { describe, expect, it } from 'vitest';
import { CONTROL_LABEL, SERVICE_READY_CONDITION } from '../ops-lifecycle/client/index.js';
import {
  deletionFinalizers,
  drainFollowUp,
  type DrainWait,
  deletionInProgress,
  enrolled,
  LIFECYCLE_DELETION_FINALIZER,
  LIFECYCLE_OPT_IN_ANNOTATION,
  lifecycleOptedIn,
  maskLifecycleDeletions,
} from './lifecycle.js';

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

describe('deletionFinalizers', () => {
  const ms = (optedIn: boolean, finalizers: string[], deleting = false): Pick<ModelServing, 'metadata'> => ({
    metadata: {
      name: 'm',
      annotations: optedIn ? { [LIFECYCLE_OPT_IN_ANNOTATION]: 'true' } : {},
      finalizers,
      ...(deleting ? { deletionTimestamp: NOW.toISOString() } : {}),
    },
  });
  it('holds an opted-in ModelServing, keeping the finalizers others put there', () => {
    expect(deletionFinalizers(ms(true, ['other']))).toEqual(['other', LIFECYCLE_DELETION_FINALIZER]);
    expect(deletionFinalizers(ms(true, [LIFECYCLE_DELETION_FINALIZER]))).toBeUndefined();
  });
  it('lets go when the opt-in is removed', () => {
    expect(deletionFinalizers(ms(false, ['other', LIFECYCLE_DELETION_FINALIZER]))).toEqual(['other']);
    expect(deletionFinalizers(ms(false, []))).toBeUndefined();
  });
  it('lets go when the opt-in is removed while the ModelServing is being deleted, so the held deletion completes', () => {
    expect(deletionFinalizers(ms(false, ['other', LIFECYCLE_DELETION_FINALIZER], true))).toEqual(['other']);
    expect(deletionFinalizers(ms(false, [LIFECYCLE_DELETION_FINALIZER], true))).toEqual([]);
  });
  it('never adds it to a ModelServing being deleted, and leaves it to the drain while still opted in', () => {
    expect(deletionFinalizers(ms(true, ['other'], true))).toBeUndefined();
    expect(deletionFinalizers(ms(true, [LIFECYCLE_DELETION_FINALIZER], true))).toBeUndefined();
  });
});

describe('drainFollowUp', () => {
  const DELETED = '2026-01-01T00:00:00.000Z';
  const at = (ms: number) => new Date(Date.parse(DELETED) + ms);
  const WARN = 600_000;
  const stuck: DrainWait[] = [
    { pod: 'ms-0-prefill-0-0', stage: 'Preparing', requeueAfterMs: Number.POSITIVE_INFINITY },
    { pod: 'ms-0-decode-0-0', stage: 'Begun', requeueAfterMs: Number.POSITIVE_INFINITY },
  ];
  it('asks nothing when no pod waits', () => {
    expect(drainFollowUp([], DELETED, at(WARN * 2), WARN)).toEqual({});
  });
  it('requeues at the bound while event-driven waits would otherwise never come back', () => {
    expect(drainFollowUp(stuck, DELETED, at(1_000), WARN)).toEqual({ requeueAfterMs: WARN - 1_000 });
  });
  it('keeps an operation delay sooner than the bound', () => {
    const delayed: DrainWait[] = [...stuck, { pod: 'p', stage: 'OperationDelay', requeueAfterMs: 5_000 }];
    expect(drainFollowUp(delayed, DELETED, at(1_000), WARN)).toEqual({ requeueAfterMs: 5_000 });
  });
  it('past the bound, names each waiting pod and its stage and says how to let go, without requeueing event-driven waits', () => {
    const next = drainFollowUp(stuck, DELETED, at(WARN), WARN);
    expect(next.requeueAfterMs).toBeUndefined();
    expect(next.overdue).toContain('ms-0-prefill-0-0 (Preparing)');
    expect(next.overdue).toContain('ms-0-decode-0-0 (Begun)');
    expect(next.overdue).toContain(LIFECYCLE_DELETION_FINALIZER);
    expect(next.overdue).toContain(`remove the annotation ${LIFECYCLE_OPT_IN_ANNOTATION}`);
  });
});
