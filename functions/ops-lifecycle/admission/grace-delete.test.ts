import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { begin, CONTROL_LABEL, Label, perIdKey, podState, SERVICE_READY_CONDITION, undo, type PodState } from '../protocol/index.js';
import { GRACE_DELETE_ADAPTER, GRACE_DELETE_ANNOTATION, graceDeleteDue, graceDeleteVerdict, graceDeleteWebhook } from './grace-delete.js';

const NOW = 1_800_000_000_000_000_000n;
const TS = '1799999999000000000';
const id = GRACE_DELETE_ADAPTER.id;
const serving = (extra: Partial<PodState> = {}): PodState =>
  podState({
    labels: { [CONTROL_LABEL]: 'true', [Label.serviceAvailable]: TS },
    readinessGates: [SERVICE_READY_CONDITION],
    conditions: [{ type: 'Ready', status: 'True' }, { type: SERVICE_READY_CONDITION, status: 'True' }],
    ...extra,
  });

describe('graceDeleteVerdict', () => {
  it('refuses a serving Pod and begins its delete operation once', () => {
    const first = graceDeleteVerdict(serving(), NOW);
    expect(first).toMatchObject({ allow: false, begin: true });
    expect(first.allow ? '' : first.message).toMatch(/pod deletion is underway through PodOpsLifecycle \(lifecycle pod-delete, type delete\)/);
    const begun = serving({ labels: { ...serving().labels, [perIdKey('operating', id)]: TS, [perIdKey('operationType', id)]: 'delete' } });
    expect(graceDeleteVerdict(begun, NOW)).toMatchObject({ allow: false, begin: false });
    // The round it begins is deleted by the lifecycle; a user's own pod-delete round (no mark) is the user's to delete.
    expect(first.allow ? '' : first.message).toMatch(/the lifecycle deletes it once operate\.podopslifecycle\.kusionstack\.io\/pod-delete is on it/);
    const verdictOf = (annotations: Record<string, string>) => graceDeleteVerdict({ ...begun, annotations }, NOW);
    const marked = verdictOf({ [GRACE_DELETE_ANNOTATION]: TS });
    expect(marked.allow ? '' : marked.message).toMatch(/the lifecycle deletes it/);
    const users = verdictOf({});
    expect(users.allow ? '' : users.message).toMatch(/delete it again once operate\.podopslifecycle\.kusionstack\.io\/pod-delete is on it/);
  });

  it('names the protection finalizers it waits for', () => {
    const held = graceDeleteVerdict(serving({ finalizers: ['prot.podopslifecycle.kusionstack.io/lb'] }), NOW);
    expect(held.allow ? '' : held.message).toContain('waiting for the protection finalizers prot.podopslifecycle.kusionstack.io/lb');
  });

  it('lets the delete go once operate is granted to the delete operation', () => {
    const granted = serving({ labels: { [CONTROL_LABEL]: 'true', [perIdKey('operating', id)]: TS, [perIdKey('operationType', id)]: 'delete', [perIdKey('operate', id)]: TS } });
    expect(graceDeleteVerdict(granted, NOW)).toEqual({ allow: true, why: 'granted' });
  });

  it('lets the delete go once any delete-type operation holds operate (deleteThroughLifecycle runs under its own ID), and begins no second one meanwhile', () => {
    const other = (extra: Record<string, string>) =>
      serving({ labels: { ...serving().labels, [perIdKey('operating', 'modelserving')]: TS, [perIdKey('operationType', 'modelserving')]: 'delete', ...extra } });
    // In gate mode operate comes in the write that turns the gate False, while Ready may still be True.
    expect(graceDeleteVerdict(other({ [perIdKey('operate', 'modelserving')]: TS }), NOW)).toEqual({ allow: true, why: 'granted' });
    const waiting = graceDeleteVerdict(other({}), NOW);
    expect(waiting).toMatchObject({ allow: false, begin: false });
    expect(waiting.allow ? '' : waiting.message).toContain('lifecycle modelserving');
    // Another ID holding operate for another type is not a delete.
    const restart = serving({ labels: { ...serving().labels, [perIdKey('operating', 'r')]: TS, [perIdKey('operationType', 'r')]: 'restart', [perIdKey('operate', 'r')]: TS } });
    expect(graceDeleteVerdict(restart, NOW)).toMatchObject({ allow: false, begin: true });
  });

  it('lets go of Pods it has no say over or nothing to drain from', () => {
    expect(graceDeleteVerdict(serving({ labels: {} }), NOW)).toEqual({ allow: true, why: 'not controlled' });
    expect(graceDeleteVerdict(serving({ readinessGates: [] }), NOW)).toEqual({ allow: true, why: 'no service-ready gate' });
    expect(graceDeleteVerdict(serving({ conditions: [{ type: 'Ready', status: 'False' }] }), NOW)).toEqual({ allow: true, why: 'out of service' });
    // Not Ready, but a cooperator still holds it: it goes through the lifecycle.
    expect(graceDeleteVerdict(serving({ conditions: [], finalizers: ['prot.podopslifecycle.kusionstack.io/lb'] }), NOW)).toMatchObject({ allow: false, begin: true });
  });
});

describe('graceDeleteDue (the lifecycle deletes for the refused caller)', () => {
  const round = (extra: Record<string, string>, annotations: Record<string, string> = { [GRACE_DELETE_ANNOTATION]: TS }) =>
    serving({
      labels: { [CONTROL_LABEL]: 'true', [perIdKey('operating', id)]: TS, [perIdKey('operationType', id)]: 'delete', ...extra },
      annotations,
    });

  it('is due once the round GraceDelete began holds operate, and not before', () => {
    expect(graceDeleteDue(round({}), NOW)).toBe(false);
    expect(graceDeleteDue(round({ [perIdKey('preparing', id)]: TS }), NOW)).toBe(false);
    expect(graceDeleteDue(round({ [perIdKey('operate', id)]: TS }), NOW)).toBe(true);
  });

  it('never for a round GraceDelete did not begin: no mark, or a mark naming an earlier round', () => {
    expect(graceDeleteDue(round({ [perIdKey('operate', id)]: TS }, {}), NOW)).toBe(false);
    expect(graceDeleteDue(round({ [perIdKey('operate', id)]: TS }, { [GRACE_DELETE_ANNOTATION]: '1700000000000000000' }), NOW)).toBe(false);
    // Another ID of type delete (deleteThroughLifecycle's owner deletes its own Pods).
    const other = serving({
      labels: { [CONTROL_LABEL]: 'true', [perIdKey('operating', 'modelserving')]: TS, [perIdKey('operationType', 'modelserving')]: 'delete', [perIdKey('operate', 'modelserving')]: TS },
      annotations: { [GRACE_DELETE_ANNOTATION]: TS },
    });
    expect(graceDeleteDue(other, NOW)).toBe(false);
  });

  it('not for a Pod already being deleted, nor once the round is finished', () => {
    expect(graceDeleteDue({ ...round({ [perIdKey('operate', id)]: TS }), deleting: true }, NOW)).toBe(false);
    const finished = serving({ labels: { [CONTROL_LABEL]: 'true', [perIdKey('operationType', id)]: 'delete', [perIdKey('operate', id)]: TS }, annotations: { [GRACE_DELETE_ANNOTATION]: TS } });
    expect(graceDeleteDue(finished, NOW)).toBe(false);
  });

  it('the adapter marks the round with its operating timestamp on begin and takes the mark back on undo', () => {
    const begun = begin({ labels: { [CONTROL_LABEL]: 'true' }, annotations: {} }, GRACE_DELETE_ADAPTER, { now: NOW });
    expect(begun.annotations[GRACE_DELETE_ANNOTATION]).toBe(begun.labels[perIdKey('operating', id)]);
    expect(begun.labels).toHaveProperty(Label.preparingToDelete);
    const undone = undo({ labels: begun.labels, annotations: begun.annotations }, GRACE_DELETE_ADAPTER, { now: NOW });
    expect(undone.annotations).not.toHaveProperty(GRACE_DELETE_ANNOTATION);
    expect(undone.labels).not.toHaveProperty(Label.preparingToDelete);
  });
});

describe('graceDeleteWebhook', () => {
  // No cluster at this address: a webhook that tried to begin would answer "could not begin".
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'none', server: 'http://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'none' }],
    contexts: [{ name: 'none', cluster: 'none', user: 'none' }],
    currentContext: 'none',
  });
  const review = (metadata: Record<string, unknown>) => ({
    uid: 'r',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    operation: 'DELETE' as const,
    namespace: 'ns',
    name: 'p',
    oldObject: {
      metadata: { name: 'p', namespace: 'ns', labels: { [CONTROL_LABEL]: 'true' }, ...metadata },
      spec: { readinessGates: [{ conditionType: SERVICE_READY_CONDITION }] },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    },
  });

  it('begins nothing for a review without the Pod uid (the API server always sends it; a forged review may not)', async () => {
    const decision = await graceDeleteWebhook({ kc }).admit(review({}), new Date(0));
    expect(decision.allowed).toBe(false);
    expect(decision.allowed ? '' : decision.message).toMatch(/no metadata\.uid/);
    expect(decision.allowed ? '' : decision.message).not.toMatch(/could not begin/);
  });
});
