import { describe, expect, it } from 'vitest';
import { openGroups, type BudgetGroup } from './disruption.js';
import { Steps, makeMS } from './test-fixtures.js';

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
