import { describe, expect, it } from 'vitest';
import { openGroups, type BudgetGroup } from './disruption.js';
import { EVICTION_SETTLE_MS } from './recovery.js';
import { Steps, makeMS, roleSpec } from './test-fixtures.js';

const g = (ordinal: number, available = true, newestPod = 0): BudgetGroup => ({ name: `llm-${ordinal}`, ordinal, available, newestPod });

describe('eviction protection: which ServingGroups may be evicted', () => {
  it('opens as many available groups as the budget allows, highest ordinal first, and every unavailable one', () => {
    expect([...openGroups([g(0), g(1), g(2)], 2)]).toEqual(['llm-2']);
    expect([...openGroups([g(0), g(1), g(2)], 1)].sort()).toEqual(['llm-1', 'llm-2']);
    expect([...openGroups([g(0), g(1, false), g(2)], 2)]).toEqual(['llm-1']);
    expect([...openGroups([g(0), g(1), g(2)], 3)]).toEqual([]);
  });

  it('passes the budget to the least recently touched group once a drained group is back with a new pod', () => {
    // llm-2 was evicted and came back (new pods): llm-1 is the next the drain needs.
    expect([...openGroups([g(0, true, 10), g(1, true, 10), g(2, true, 500)], 2)]).toEqual(['llm-1']);
  });

  it("leaves an evicted group's other pods to the drain for a while instead of replacing them under the same names", () => {
    // kubectl drain retries a refused eviction by pod name every 5 s: a sibling replaced under its name before
    // the retry would be what the retry hits, on another node, closed by its PDB once the group is back.
    const ms = makeMS({ replicas: 2, template: { roles: [roleSpec('main', { workers: 1 })] } });
    ms.metadata.annotations = { 'ripple.dev/eviction-protection': 'true' };
    const s = new Steps(ms);
    s.converge();
    s.pods.delete('llm-1-main-0-1'); // evicted by the drain, already gone
    const first = s.plan();
    expect(first.actions.filter((a) => a.kind === 'deletePod')).toEqual([]);
    expect(first.requeueAfterSeconds).toBeLessThanOrEqual(EVICTION_SETTLE_MS / 1000);
    // Not refilled either: a pod created now under the evicted name is what the drain would retry.
    expect(first.actions.filter((a) => a.kind === 'createPod')).toEqual([]);
    s.apply(first);
    // Within the window the drain evicts the entry pod too; then the instance is created again, whole.
    s.now += 5_000;
    s.pods.delete('llm-1-main-0-0');
    const second = s.plan();
    expect(second.actions.filter((a) => a.kind === 'deletePod')).toEqual([]);
    expect(second.actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod.metadata?.name] : [])).sort()).toEqual(['llm-1-main-0-0', 'llm-1-main-0-1']);
  });

  it('replaces a disrupted instance once the window has passed, and only waits when protected', () => {
    const ms = makeMS({ replicas: 1, template: { roles: [roleSpec('main', { workers: 1 })] } });
    ms.metadata.annotations = { 'ripple.dev/eviction-protection': 'true' };
    const s = new Steps(ms);
    s.converge();
    s.pods.delete('llm-0-main-0-1');
    s.apply(s.plan());
    s.now += EVICTION_SETTLE_MS;
    const late = s.plan();
    expect(late.actions.filter((a) => a.kind === 'deletePod').map((a) => (a.kind === 'deletePod' ? a.name : ''))).toContain('llm-0-main-0-0');

    const plain = new Steps(makeMS({ replicas: 1, template: { roles: [roleSpec('main', { workers: 1 })] } }));
    plain.converge();
    plain.pods.delete('llm-0-main-0-1');
    expect(plain.plan().actions.filter((a) => a.kind === 'deletePod').map((a) => (a.kind === 'deletePod' ? a.name : ''))).toContain('llm-0-main-0-0');
  });

  it('plans one PDB per group, owned by the ModelServing, only when opted in; removes them on opt-out', () => {
    const ms = makeMS({ replicas: 3 });
    ms.metadata.annotations = { 'ripple.dev/eviction-protection': 'true' };
    const s = new Steps(ms);
    s.converge();
    const plan = s.plan({ disruptionBudgets: [] });
    const pdbs = plan.actions.flatMap((a) => (a.kind === 'createDisruptionBudget' ? [a.object] : []));
    expect(pdbs.map((p) => [p.metadata.name, p.spec?.maxUnavailable])).toEqual([
      ['llm-0', 0],
      ['llm-1', 0],
      ['llm-2', '100%'],
    ]);
    const observed = pdbs.map((p, i) => ({ ...p, metadata: { ...p.metadata, uid: `p${i}`, resourceVersion: '1' } }));
    // Nothing changed since: no PDB write.
    expect(s.plan({ disruptionBudgets: observed }).actions.filter((a) => a.kind.endsWith('DisruptionBudget'))).toEqual([]);
    s.ms = { ...s.ms, metadata: { ...s.ms.metadata, annotations: { 'ripple.dev/eviction-protection': 'false' } } };
    expect(s.plan({ disruptionBudgets: observed }).actions.filter((a) => a.kind === 'deleteDisruptionBudget')).toHaveLength(3);
  });
});
