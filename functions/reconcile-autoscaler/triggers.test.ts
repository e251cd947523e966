import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../kube/object.js';
import { Resources, type ResourceRef } from '../../kube/resources.js';
import type { MapContext, Trigger } from '../../runtime/function.js';
import type { WatchEvent } from '../../watcher/events.js';
import { passes } from '../../watcher/predicates.js';
import { autoscalerNames } from './config/names.js';
import { CONFIG_KEY } from './keys.js';
import { autoscalerTriggers } from './triggers.js';

const names = autoscalerNames({ POD_NAMESPACE: 'wva' }).names;
const triggers = autoscalerTriggers(names);
const triggerFor = (r: ResourceRef): Trigger => triggers.find((t) => t.resource === r)!;

const va = (name: string, target: string, labels: Record<string, string> = {}, ns = 'llm'): KubeObject => ({
  apiVersion: 'llmd.ai/v1alpha1',
  kind: 'VariantAutoscaling',
  metadata: { name, namespace: ns, uid: `uid-${name}`, resourceVersion: '1', labels },
  spec: { scaleTargetRef: { kind: 'Deployment', name: target }, modelID: 'm' },
});
const obj = (name: string, ns: string, extra: Partial<KubeObject['metadata']> = {}): KubeObject => ({ metadata: { name, namespace: ns, uid: `uid-${name}`, resourceVersion: '1', ...extra } });
const store: KubeObject[] = [va('a', 'llama'), va('b', 'llama'), va('c', 'other'), va('d', 'llama', {}, 'elsewhere')];
const mapCtx: MapContext = { list: (r, ns) => (r === Resources.variantAutoscaling ? store.filter((o) => ns === undefined || o.metadata.namespace === ns) : []) };

/** What one event enqueues through one trigger. */
function enqueued(t: Trigger, e: WatchEvent): string[] {
  return passes(t.predicate, e) ? t.map(e, mapCtx) : [];
}
const all = (o: KubeObject) => ({
  create: { type: 'create', object: o } as WatchEvent,
  update: { type: 'update', old: o, object: { ...o, metadata: { ...o.metadata, resourceVersion: '2' } } } as WatchEvent,
  delete: { type: 'delete', object: o, synthetic: false } as WatchEvent,
  generic: { type: 'generic', object: o } as WatchEvent,
});

describe('seed 003 triggers', () => {
  it('VariantAutoscaling: Create only', () => {
    const e = all(va('a', 'llama'));
    const t = triggerFor(Resources.variantAutoscaling);
    expect([enqueued(t, e.create), enqueued(t, e.update), enqueued(t, e.delete), enqueued(t, e.generic)]).toEqual([['llm/a'], [], [], []]);
  });

  it('Deployment: Create and Delete, mapped to the VAs in its namespace that name it', () => {
    const e = all(obj('llama', 'llm'));
    const t = triggerFor(Resources.deployment);
    expect([enqueued(t, e.create), enqueued(t, e.update), enqueued(t, e.delete), enqueued(t, e.generic)]).toEqual([['llm/a', 'llm/b'], [], ['llm/a', 'llm/b'], []]);
    expect(enqueued(t, all(obj('nobody', 'llm')).create)).toEqual([]);
  });

  it('ConfigMaps: the two ConfigMaps under both generations of names in the controller namespace, Create and Update, to @config', () => {
    const t = triggerFor(Resources.configMap);
    expect(t.namespace).toBe('wva');
    const watched = ['workload-variant-autoscaler-variantautoscaling-config', 'saturation-scaling-config', 'wva-variantautoscaling-config', 'wva-saturation-scaling-config'];
    for (const name of watched) {
      const e = all(obj(name, 'wva'));
      expect([enqueued(t, e.create), enqueued(t, e.update), enqueued(t, e.delete), enqueued(t, e.generic)]).toEqual([[CONFIG_KEY], [CONFIG_KEY], [], []]);
    }
    const other = all(obj('some-other-config', 'wva'));
    expect([enqueued(t, other.create), enqueued(t, other.update)]).toEqual([[], []]);
    expect(enqueued(t, all(obj('wva-saturation-scaling-config', 'elsewhere')).update)).toEqual([]);
    // The scale-to-zero ConfigMap is not in seed 003's list: each cycle reads it.
    expect(enqueued(t, all(obj('wva-model-scale-to-zero-config', 'wva')).update)).toEqual([]);
  });

  it('ConfigMap names follow the environment', () => {
    const t = autoscalerTriggers(autoscalerNames({ POD_NAMESPACE: 'x', SATURATION_CONFIG_MAP_NAME: 'my-sat' }).names).find((x) => x.resource === Resources.configMap)!;
    expect(enqueued(t, all(obj('my-sat', 'x')).update)).toEqual([CONFIG_KEY]);
    expect(enqueued(t, all(obj('saturation-scaling-config', 'x')).update)).toEqual([]);
  });

  it('ServiceMonitor: optional; create processed with nothing to do; deletion (update with deletionTimestamp, or delete) to its key', () => {
    const t = triggerFor(Resources.serviceMonitor);
    expect(t.optional).toBe(true);
    const sm = obj(names.serviceMonitor, 'wva');
    const e = all(sm);
    const deleting: WatchEvent = { type: 'update', old: sm, object: { ...sm, metadata: { ...sm.metadata, resourceVersion: '3', deletionTimestamp: '2026-01-29T10:00:00Z' } } };
    expect(passes(t.predicate, e.create)).toBe(true);
    expect([enqueued(t, e.create), enqueued(t, e.update), enqueued(t, deleting), enqueued(t, e.delete), enqueued(t, e.generic)]).toEqual([
      [],
      [],
      [`@service-monitor/uid-${names.serviceMonitor}`],
      [`@service-monitor/uid-${names.serviceMonitor}`],
      [],
    ]);
    expect(enqueued(t, all(obj('another-monitor', 'wva')).delete)).toEqual([]);
  });

  it('with CONTROLLER_INSTANCE, only VAs labelled for it', () => {
    const ts = autoscalerTriggers(autoscalerNames({ CONTROLLER_INSTANCE: 'blue' }).names);
    const vaTrigger = ts.find((x) => x.resource === Resources.variantAutoscaling)!;
    expect(enqueued(vaTrigger, all(va('a', 'llama')).create)).toEqual([]);
    expect(enqueued(vaTrigger, all(va('a', 'llama', { 'wva.llmd.ai/controller-instance': 'blue' })).create)).toEqual(['llm/a']);
    expect(enqueued(ts.find((x) => x.resource === Resources.deployment)!, all(obj('llama', 'llm')).create)).toEqual([]);
  });
});
