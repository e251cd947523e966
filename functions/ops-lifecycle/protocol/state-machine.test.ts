import { describe, expect, it } from 'vitest';
import { expectationKey } from './available-conditions.js';
import { lifecycleFinalizerFor, planCooperation, type Cooperator } from './cooperation.js';
import { AVAILABLE_CONDITIONS_ANNOTATION, CONTROL_LABEL, Label, LabelPrefix, perIdKey as k, SERVICE_READY_CONDITION } from './keys.js';
import { applyDiff } from './metadata-diff.js';
import { allowOps, begin, finish, isDuringOps, markPreparingToDelete, undo, type OperationAdapter } from './operation.js';
import { podState, serviceReadyStatus, type ConditionStatus, type PodState } from './pod-state.js';
import { planReconcile, type TransitionChecks } from './reconcile-plan.js';
import type { LifecycleStage } from './stage.js';
import { parseLifecycleView } from './view.js';

/**
 * A pure little world: one Pod, the lifecycle reconciler, a kubelet that folds readiness gates into Ready,
 * and cooperation controllers. Each step lets every actor act once on what it sees, as watch-driven
 * controllers would; `settle` runs steps until nobody has anything left to do.
 */
class World {
  pod: PodState;
  now = 1_700_000_000_000_000_000n;
  gateHistory: Array<ConditionStatus | undefined> = [];
  stages: Array<Record<string, LifecycleStage>> = [];
  cooperators: Array<{ c: Cooperator; paused: boolean }> = [];
  checks: Partial<TransitionChecks> = {};

  constructor(labels: Record<string, string> = {}, opts: { gate?: boolean } = {}) {
    this.pod = podState({
      labels: { [CONTROL_LABEL]: 'true', ...labels },
      readinessGates: opts.gate === false ? [] : [SERVICE_READY_CONDITION],
      conditions: [{ type: 'ContainersReady', status: 'True' }],
    });
    this.kubelet();
  }

  private setCondition(type: string, status: ConditionStatus): boolean {
    const existing = this.pod.conditions.find((c) => c.type === type);
    if (existing?.status === status) return false;
    this.pod = { ...this.pod, conditions: [...this.pod.conditions.filter((c) => c.type !== type), { type, status }] };
    return true;
  }

  private kubelet(): boolean {
    const gatesOk = this.pod.readinessGates.every((g) => serviceReadyStatus(this.pod) === 'True' || g !== SERVICE_READY_CONDITION);
    return this.setCondition('Ready', gatesOk ? 'True' : 'False');
  }

  addCooperator(name: string): Cooperator {
    const c = { key: expectationKey({ kind: 'Service', namespace: 'default', name }), finalizer: lifecycleFinalizerFor(name) };
    this.cooperators.push({ c, paused: false });
    return c;
  }

  pause(c: Cooperator, paused = true): void {
    const entry = this.cooperators.find((x) => x.c === c);
    if (entry) entry.paused = paused;
  }

  write(r: { labels: Record<string, string>; annotations: Record<string, string> }): void {
    this.pod = { ...this.pod, labels: r.labels, annotations: r.annotations };
  }

  step(): boolean {
    this.now += 1_000_000n;
    let changed = false;
    const plan = planReconcile({ pod: this.pod, now: this.now, checks: this.checks });
    if (plan.changed) {
      changed = true;
      this.pod = {
        ...this.pod,
        labels: applyDiff(this.pod.labels, plan.labels),
        annotations: applyDiff(this.pod.annotations, plan.annotations),
      };
      if (plan.serviceReady) this.setCondition(SERVICE_READY_CONDITION, plan.serviceReady.status);
    }
    changed = this.kubelet() || changed;
    for (const { c, paused } of this.cooperators) {
      if (paused) continue;
      const cp = planCooperation({ pod: this.pod, cooperator: c, selected: true });
      if (!cp.changed) continue;
      changed = true;
      let finalizers = [...this.pod.finalizers];
      if (cp.addFinalizer) finalizers.push(cp.addFinalizer);
      if (cp.removeFinalizer) finalizers = finalizers.filter((f) => f !== cp.removeFinalizer);
      this.pod = { ...this.pod, finalizers, annotations: applyDiff(this.pod.annotations, cp.annotations) };
    }
    this.record();
    return changed;
  }

  settle(max = 50): void {
    for (let i = 0; i < max; i++) if (!this.step()) return;
    throw new Error('did not settle');
  }

  private record(): void {
    const gate = serviceReadyStatus(this.pod);
    if (this.gateHistory.at(-1) !== gate) this.gateHistory.push(gate);
    const view = parseLifecycleView(this.pod.labels);
    this.stages.push(Object.fromEntries(view.lifecycles.map((e) => [e.id, e.stage])));
  }

  stageOf(id: string): LifecycleStage | undefined {
    return parseLifecycleView(this.pod.labels).lifecycles.find((e) => e.id === id)?.stage;
  }

  stagesSeen(id: string): LifecycleStage[] {
    const seen: LifecycleStage[] = [];
    for (const s of this.stages) {
      const st = s[id];
      if (st !== undefined && seen.at(-1) !== st) seen.push(st);
    }
    return seen;
  }

  lifecycleLabels(): string[] {
    return Object.keys(this.pod.labels).filter((key) => key.includes('podopslifecycle.kusionstack.io')).sort();
  }
}

const update: OperationAdapter = { id: 'rollout', type: 'update', allowMultiType: true };
const deletion: OperationAdapter = { id: 'pod-delete', type: 'delete', allowMultiType: true, whenBegin: markPreparingToDelete };

function operate(w: World, a: OperationAdapter, opts: { delaySeconds?: number } = {}) {
  return allowOps(w.pod, a, { now: w.now, operationDelaySeconds: opts.delaySeconds ?? 0 });
}

describe('lifecycle state machine', () => {
  it('a new Pod becomes service-available, and its cooperator records and adds its finalizer', () => {
    const w = new World();
    const lb = w.addCooperator('web');
    w.settle();
    expect(serviceReadyStatus(w.pod)).toBe('True');
    expect(w.pod.labels[Label.serviceAvailable]).toBeDefined();
    expect(w.pod.finalizers).toEqual([lb.finalizer]);
    expect(JSON.parse(w.pod.annotations[AVAILABLE_CONDITIONS_ANNOTATION] ?? '{}')).toEqual({ expectedFinalizers: { [lb.key]: lb.finalizer } });
    expect(parseLifecycleView(w.pod.labels).phase).toBe('ServiceAvailable');
  });

  it('one operation end to end: stages in order, gate False then True, service-available back', () => {
    const w = new World();
    w.addCooperator('web');
    w.settle();

    w.write(begin(w.pod, update, { now: w.now }));
    w.settle();
    expect(w.stageOf('rollout')).toBe('operate');
    expect(w.pod.finalizers).toEqual([]); // the cooperator let go of the Pod
    expect(w.pod.labels[Label.serviceAvailable]).toBeUndefined();
    expect(operate(w, update)).toEqual({ allowed: true });

    w.write(finish(w.pod, update, { now: w.now }));
    w.settle();

    // pre-check, operated and post-check pass within one write each when no check holds them (see the table).
    expect(w.stagesSeen('rollout')).toEqual(['preparing', 'operate', 'completing']);
    expect(w.gateHistory).toEqual(['True', 'False', 'True']);
    expect(w.lifecycleLabels()).toEqual([Label.serviceAvailable]);
    expect(w.pod.finalizers).toHaveLength(1);
  });

  it('an operation waits in Preparing until the cooperation controller removes its finalizer', () => {
    const w = new World();
    const lb = w.addCooperator('web');
    w.settle();
    w.pause(lb);

    w.write(begin(w.pod, update, { now: w.now }));
    w.settle();
    expect(w.stageOf('rollout')).toBe('preparing');
    expect(serviceReadyStatus(w.pod)).toBe('False');
    expect(operate(w, update)).toEqual({ allowed: false });

    w.pause(lb, false);
    w.settle();
    expect(w.stageOf('rollout')).toBe('operate');
    expect(operate(w, update)).toEqual({ allowed: true });
  });

  it('completing waits for the cooperator to take the Pod back before it is service-available again', () => {
    const w = new World();
    const lb = w.addCooperator('web');
    w.settle();
    w.write(begin(w.pod, update, { now: w.now }));
    w.settle();
    w.pause(lb);
    w.write(finish(w.pod, update, { now: w.now }));
    w.settle();
    expect(w.stageOf('rollout')).toBe('completing');
    expect(serviceReadyStatus(w.pod)).toBe('True');
    expect(w.pod.labels[Label.serviceAvailable]).toBeUndefined();

    w.pause(lb, false);
    w.settle();
    expect(w.lifecycleLabels()).toEqual([Label.serviceAvailable]);
  });

  it('two operation types at once: each operates, neither passes operate before both finished', () => {
    const w = new World();
    w.addCooperator('web');
    w.settle();

    w.write(begin(w.pod, update, { now: w.now }));
    w.write(begin(w.pod, deletion, { now: w.now }));
    w.settle();
    expect(w.stageOf('rollout')).toBe('operate');
    expect(w.stageOf('pod-delete')).toBe('operate');
    expect(operate(w, update).allowed).toBe(true);
    expect(operate(w, deletion).allowed).toBe(true);
    expect(w.pod.labels[Label.preparingToDelete]).toBeDefined();

    w.write(finish(w.pod, update, { now: w.now }));
    w.settle();
    // The barrier: rollout has let go but stays at operate while pod-delete still operates.
    expect(w.stageOf('rollout')).toBe('operate');
    expect(isDuringOps(w.pod, update)).toBe(false);
    expect(serviceReadyStatus(w.pod)).toBe('False');

    w.write(finish(w.pod, deletion, { now: w.now }));
    w.settle();
    expect(w.stagesSeen('rollout')).toEqual(['preparing', 'operate', 'completing']);
    expect(w.stagesSeen('pod-delete')).toEqual(['preparing', 'operate', 'completing']);
    expect(w.lifecycleLabels()).toEqual([Label.preparingToDelete, Label.serviceAvailable].sort());
    expect(w.gateHistory).toEqual(['True', 'False', 'True']);
  });

  it('the gate does not flap while one ID completes and another is operated (#248)', () => {
    const w = new World();
    const lb = w.addCooperator('web');
    w.settle();

    // A reaches completing, but its cooperator is away, so it cannot clean up.
    const a: OperationAdapter = { id: 'a', type: 'update', allowMultiType: true };
    const b: OperationAdapter = { id: 'b', type: 'restart', allowMultiType: true };
    w.write(begin(w.pod, a, { now: w.now }));
    w.settle();
    w.pause(lb);
    w.write(finish(w.pod, a, { now: w.now }));
    w.settle();
    expect(w.stageOf('a')).toBe('completing');
    expect(serviceReadyStatus(w.pod)).toBe('True');

    // B runs its whole operation while A sits in completing.
    w.gateHistory = [serviceReadyStatus(w.pod)];
    w.write(begin(w.pod, b, { now: w.now }));
    w.settle();
    expect(w.stageOf('b')).toBe('operate');
    expect(serviceReadyStatus(w.pod)).toBe('False'); // kuperator: True again here, as A is completing
    w.step();
    w.step();
    expect(serviceReadyStatus(w.pod)).toBe('False');
    w.write(finish(w.pod, b, { now: w.now }));
    w.settle();
    expect(w.stageOf('b')).toBe('completing');
    expect(w.gateHistory).toEqual(['True', 'False', 'True']);

    w.pause(lb, false);
    w.settle();
    expect(w.lifecycleLabels()).toEqual([Label.serviceAvailable]);
    expect(w.gateHistory).toEqual(['True', 'False', 'True']);
  });

  it('undo clears every label of its ID mid-flight, and the Pod returns to service', () => {
    const w = new World();
    const lb = w.addCooperator('web');
    w.settle();
    w.pause(lb);
    w.write(begin(w.pod, deletion, { now: w.now }));
    w.settle();
    expect(w.stageOf('pod-delete')).toBe('preparing');

    w.write(undo(w.pod, { ...deletion, whenUndo: (d) => void delete d.labels[Label.preparingToDelete] }, { now: w.now }));
    expect(Object.keys(w.pod.labels).filter((key) => key.endsWith('/pod-delete'))).toEqual([]);
    expect(Object.keys(w.pod.labels).some((key) => key.startsWith('operation-permission.'))).toBe(false);
    w.pause(lb, false);
    w.settle();
    expect(w.lifecycleLabels()).toEqual([Label.serviceAvailable]);
    expect(serviceReadyStatus(w.pod)).toBe('True');
  });

  it('an undo label written by a kuperator client is honoured', () => {
    const w = new World();
    w.settle();
    w.write(begin(w.pod, update, { now: w.now }));
    w.step();
    w.write({ labels: { ...w.pod.labels, [k('undoOperationType', 'rollout')]: 'update' }, annotations: w.pod.annotations });
    w.settle();
    expect(w.lifecycleLabels()).toEqual([Label.serviceAvailable]);
  });

  it('operationDelaySeconds=10 holds the operator for 10 s after operate', () => {
    const w = new World();
    w.settle();
    w.write(begin(w.pod, update, { now: w.now }));
    w.settle();
    const operateAt = BigInt(w.pod.labels[k('operate', 'rollout')] ?? '0');
    const first = allowOps(w.pod, update, { now: operateAt, operationDelaySeconds: 10 });
    expect(first).toEqual({ allowed: false, requeueAfterMs: 10_000 });
    expect(allowOps(w.pod, update, { now: operateAt + 9_999_999_999n, operationDelaySeconds: 10 }).allowed).toBe(false);
    expect(allowOps(w.pod, update, { now: operateAt + 10_000_000_000n, operationDelaySeconds: 10 }).allowed).toBe(true);
  });

  it('a failing pre-check holds the lifecycle before it takes the Pod out of service', () => {
    const w = new World();
    w.settle();
    w.checks = { preCheck: false };
    w.write(begin(w.pod, update, { now: w.now }));
    w.settle();
    expect(w.stageOf('rollout')).toBe('pre-check');
    expect(serviceReadyStatus(w.pod)).toBe('True');
    expect(w.pod.labels[Label.serviceAvailable]).toBeDefined();
    w.checks = {};
    w.settle();
    expect(w.stageOf('rollout')).toBe('operate');
  });

  it('stay-offline never puts the Pod in service, before and after a lifecycle', () => {
    const w = new World({ [Label.stayOffline]: 'true' });
    w.settle();
    expect(serviceReadyStatus(w.pod)).not.toBe('True');
    expect(w.pod.labels[Label.serviceAvailable]).toBeUndefined();

    w.write(begin(w.pod, update, { now: w.now }));
    w.settle();
    w.write(finish(w.pod, update, { now: w.now }));
    w.settle();
    expect(w.lifecycleLabels()).toEqual([Label.stayOffline]);
    expect(w.gateHistory.every((g) => g !== 'True')).toBe(true);
  });

  it('an operator that finishes before operate leaves nothing behind', () => {
    const w = new World();
    const lb = w.addCooperator('web');
    w.settle();
    w.pause(lb);
    w.write(begin(w.pod, update, { now: w.now }));
    w.settle();
    expect(w.stageOf('rollout')).toBe('preparing');
    w.write(finish(w.pod, update, { now: w.now }));
    w.pause(lb, false);
    w.settle();
    expect(w.lifecycleLabels()).toEqual([Label.serviceAvailable]);
  });

  it('labels of an ID that lost operating before operate are cleared by the reconciler too', () => {
    const w = new World();
    w.settle();
    w.write(begin(w.pod, update, { now: w.now }));
    w.step();
    const labels = { ...w.pod.labels };
    delete labels[k('operating', 'rollout')]; // a kuperator-style Finish
    w.write({ labels, annotations: w.pod.annotations });
    w.settle();
    expect(w.lifecycleLabels()).toEqual([Label.serviceAvailable]);
  });

  it('without the gate in spec, the condition is still driven for cooperation controllers', () => {
    const w = new World({}, { gate: false });
    const lb = w.addCooperator('web');
    w.settle();
    w.write(begin(w.pod, update, { now: w.now }));
    w.settle();
    expect(w.stageOf('rollout')).toBe('operate');
    expect(w.pod.finalizers).not.toContain(lb.finalizer);
    expect(serviceReadyStatus(w.pod)).toBe('False');
  });

  it('uses only keys of the PodOpsLifecycle protocol', () => {
    const w = new World();
    w.addCooperator('web');
    w.settle();
    w.write(begin(w.pod, deletion, { now: w.now }));
    w.settle();
    const prefixes = new Set(Object.values(LabelPrefix));
    for (const key of Object.keys(w.pod.labels)) {
      const prefix = key.split('/')[0] ?? '';
      expect(prefixes.has(prefix as never) || key.startsWith('podopslifecycle.') || key.startsWith('operation-permission.') || key === CONTROL_LABEL).toBe(true);
    }
  });
});
