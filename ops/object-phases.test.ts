import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Resources } from '../kube/resources.js';
import { phasesOf, registerObjectPhases } from './object-phases.js';

describe('object phases for the alert rules', () => {
  it('one series per object with a phase; objects without status are left out', async () => {
    const registry = new Registry();
    const lists: Record<string, unknown> = {
      '/apis/workload.serving.volcano.sh/v1alpha1/modelservings': {
        items: [
          { metadata: { name: 'a', namespace: 'llm' }, status: { phase: 'Degraded' } },
          { metadata: { name: 'new', namespace: 'llm' } },
        ],
      },
      '/apis/llmd.ai/v1alpha1/variantautoscalings': { items: [{ metadata: { name: 'v', namespace: 'llm' }, status: { phase: 'Failed' } }] },
    };
    const asked: Array<Record<string, string>> = [];
    registerObjectPhases(registry, {
      resources: [Resources.modelServing, Resources.variantAutoscaling],
      get: async (path, query) => {
        asked.push(query);
        return lists[path];
      },
    });
    const text = await registry.metrics();
    expect(text).toContain('ripple_object_phase{kind="ModelServing",namespace="llm",name="a",phase="Degraded"} 1');
    expect(text).toContain('ripple_object_phase{kind="VariantAutoscaling",namespace="llm",name="v",phase="Failed"} 1');
    expect(text).not.toContain('name="new"');
    expect(asked.every((q) => q.resourceVersion === '0')).toBe(true);
  });

  it('a kind that cannot be listed (CRD not installed) is left out, not an error', async () => {
    const registry = new Registry();
    registerObjectPhases(registry, {
      resources: [Resources.modelServing],
      get: async () => {
        throw new Error('404');
      },
    });
    expect(await registry.metrics()).not.toMatch(/^ripple_object_phase\{/m);
    expect(phasesOf('X', { kind: 'Status' })).toEqual([]);
  });
});
