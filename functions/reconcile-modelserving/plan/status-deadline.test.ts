// The progress deadline (issue 13 scenario 4) reconcile by reconcile, with Kubernetes' Deployment
// semantics: a rollout that stops making progress is reported once the deadline passes, progress
// resets the clock, and a generation that completed is not checked again.
import { describe, expect, it } from 'vitest';
import type { ModelServingStatus } from '../../../api/modelserving.js';
import { PROGRESS_DEADLINE_ANNOTATION, deadlineExceeded, lastProgressTime, madeProgress } from './status-deadline.js';
import { Steps, T0, makeMS } from './test-fixtures.js';

const progressing = (s: ModelServingStatus | undefined) => s?.conditions?.find((c) => c.type === 'Progressing');

function withDeadline(seconds: string): Steps {
  const ms = makeMS({ replicas: 2, rolloutStrategy: { rollingUpdateConfiguration: { maxUnavailable: 2 } } });
  return new Steps({ ...ms, metadata: { ...ms.metadata, annotations: { [PROGRESS_DEADLINE_ANNOTATION]: seconds } } });
}

function setImage(img: string) {
  return (spec: Record<string, unknown>) => {
    const roles = (spec as { template: { roles: Array<{ entryTemplate: { spec: { containers: Array<{ image: string }> } } }> } }).template.roles;
    for (const r of roles) r.entryTemplate.spec.containers[0]!.image = img;
  };
}

describe('progress deadline', () => {
  it('a rollout whose pods never become ready passes its deadline, naming the stuck groups; progress resets the clock', () => {
    const s = withDeadline('60');
    s.converge();
    expect(s.ms.status?.lastProgressTime).toBeUndefined();
    s.setSpec(setImage('vllm:v2'));
    s.apply(s.plan()); // deletes both outdated groups: a new generation starts the clock
    expect(s.ms.status?.lastProgressTime).toBe(new Date(T0).toISOString());
    s.gone();
    s.now += 10_000;
    s.apply(s.plan()); // creates their pods on v2: progress
    expect(s.ms.status?.lastProgressTime).toBe(new Date(T0 + 10_000).toISOString());
    // Nothing moves for a while: the plan asks to be run again when the deadline would pass.
    s.now += 30_000;
    const waiting = s.plan();
    expect(waiting.requeueAfterSeconds).toBe(30);
    expect(progressing(waiting.status)?.reason).not.toBe('ProgressDeadlineExceeded');
    s.now += 30_000;
    const stuck = s.plan();
    expect(progressing(stuck.status)).toMatchObject({
      status: 'False',
      reason: 'ProgressDeadlineExceeded',
      message:
        'ServingGroups llm-0, llm-1 have made no progress for 60s (progress deadline, annotation ripple.dev/progress-deadline-seconds); not ready: llm-0/prefill-0, llm-1/prefill-0',
    });
    // As a Deployment shows it: not available, not progressing (every group is on the new revision,
    // so no update is in progress either).
    expect(stuck.status.conditions?.filter((c) => c.status === 'True')).toEqual([]);
    s.apply(stuck);
    // Group 0 comes up: progress, and the deadline no longer holds.
    s.ready((p) => p.metadata?.name === 'llm-0-prefill-0-0');
    const moved = s.plan();
    expect(progressing(moved.status)?.reason).not.toBe('ProgressDeadlineExceeded');
    expect(moved.status.lastProgressTime).toBe(new Date(s.now).toISOString());
    s.apply(moved);
    s.now += 61_000;
    const again = s.plan();
    expect(progressing(again.status)?.message).toMatch(/^ServingGroups llm-1 have made no progress/);
    s.apply(again);
    s.converge();
    expect(s.ms.status?.lastProgressTime).toBeUndefined();
    expect(s.ms.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
  });

  it('a completed generation that later loses a pod is not a stuck rollout (that is Degraded, elsewhere)', () => {
    const s = withDeadline('60');
    s.converge();
    const p = s.pods.get('llm-0-prefill-0-0');
    if (p) p.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] };
    s.now += 3_600_000;
    const plan = s.plan();
    expect(plan.status.lastProgressTime).toBeUndefined();
    expect(progressing(plan.status)?.reason).not.toBe('ProgressDeadlineExceeded');
  });

  it('a scale-down whose pods take long to terminate completes at once, as a ReplicaSet ignores terminating pods', () => {
    const s = withDeadline('60');
    s.setSpec((spec) => {
      spec.replicas = 3;
    });
    s.converge();
    s.setSpec((spec) => {
      spec.replicas = 1;
    });
    s.apply(s.plan()); // deletes groups 1 and 2; their pods drain for a long time (grace period, lifecycle)
    expect(s.livePodNames()).toEqual(['llm-0-prefill-0-0']);
    s.now += 3_600_000;
    const later = s.plan();
    expect(later.status.lastProgressTime).toBeUndefined();
    expect(progressing(later.status)?.reason).not.toBe('ProgressDeadlineExceeded');
    expect(later.requeueAfterSeconds).toBeUndefined();
  });

  it('a group replaced in place (same name, below spec.replicas) still counts until its pods are gone', () => {
    const s = withDeadline('60');
    s.converge();
    s.setSpec(setImage('vllm:v2'));
    s.apply(s.plan()); // deletes both outdated groups, which come back under the same names
    s.now += 61_000;
    const stuck = s.plan();
    expect(progressing(stuck.status)).toMatchObject({ status: 'False', reason: 'ProgressDeadlineExceeded' });
    expect(progressing(stuck.status)?.message).toMatch(/^ServingGroups llm-0, llm-1 have made no progress/);
  });

  it('counts as progress what a Deployment does, plus role instances', () => {
    const base: ModelServingStatus = { replicas: 2, updatedReplicas: 1, availableReplicas: 1, roles: [{ name: 'a', replicas: 2, readyReplicas: 1, updatedReplicas: 1 }] };
    expect(madeProgress(base, base)).toBe(false);
    expect(madeProgress(base, { ...base, updatedReplicas: 2 })).toBe(true);
    expect(madeProgress(base, { ...base, availableReplicas: 2 })).toBe(true);
    expect(madeProgress({ ...base, replicas: 3 }, base)).toBe(true); // an old group went away
    expect(madeProgress(base, { ...base, roles: [{ name: 'a', replicas: 2, readyReplicas: 2, updatedReplicas: 1 }] })).toBe(true);
    expect(madeProgress(base, { ...base, availableReplicas: 0 })).toBe(false);
  });

  it('starts the clock on a new generation, keeps it without progress, drops it once complete', () => {
    const next: ModelServingStatus = { replicas: 1, updatedReplicas: 0 };
    const last = '2026-01-01T00:00:00.000Z';
    const now = '2026-01-01T00:05:00.000Z';
    expect(lastProgressTime({ previous: { observedGeneration: 1, lastProgressTime: last }, generation: 2, complete: false, next, nowIso: now })).toBe(now);
    expect(lastProgressTime({ previous: { observedGeneration: 2, lastProgressTime: last, replicas: 1, updatedReplicas: 0 }, generation: 2, complete: false, next, nowIso: now })).toBe(last);
    expect(lastProgressTime({ previous: { observedGeneration: 2, lastProgressTime: last }, generation: 2, complete: true, next, nowIso: now })).toBeUndefined();
    expect(deadlineExceeded(last, 300, Date.parse(now))).toBe(true);
    expect(deadlineExceeded(last, 301, Date.parse(now))).toBe(false);
  });
});
