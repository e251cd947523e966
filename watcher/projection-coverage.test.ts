import { describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.js';
import type { KubeObject } from '../kube/object.js';
import { resourceId, type ResourceRef } from '../kube/resources.js';
import type { MapContext, Trigger } from '../runtime/function.js';
import type { WatchEvent } from './events.js';
import { passes } from './predicates.js';
import { mergeProjections, project, type Projection } from './projection.js';

/**
 * The projections declared on Ripple's own triggers must keep what their predicates and mappers read:
 * for every trigger, every event built from a rich object and a copy with one field changed must be
 * decided (predicate) and mapped (mapper, with MapContext answering from projected stores) the same
 * whether the objects are whole or projected as the watcher stores them.
 */
const triggers = allFunctions().flatMap((fn) => fn.triggers.map((t) => ({ fn: fn.name, trigger: t })));

function groupProjection(resource: ResourceRef, labelSelector: string | undefined): Projection | undefined {
  const same = triggers.filter(({ trigger }) => resourceId(trigger.resource) === resourceId(resource) && (trigger.labelSelector ?? '') === (labelSelector ?? ''));
  return mergeProjections(same.map(({ trigger }) => trigger.projection));
}

const NS = 'ns';
const LABELS = { 'modelserving.volcano.sh/name': 'ms', 'kusionstack.io/control': 'true', 'ripple.dev/x': 'a' };

/** An object carrying every field any of Ripple's predicates or mappers reads, whatever its kind. */
function rich(name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Any',
    metadata: {
      name,
      namespace: NS,
      uid: `uid-${name}`,
      resourceVersion: '1',
      generation: 1,
      labels: { ...LABELS },
      annotations: { 'a/b': 'c' },
      finalizers: ['f'],
      ownerReferences: [{ apiVersion: 'workload.serving.volcano.sh/v1alpha1', kind: 'ModelServing', name: 'ms', uid: 'u', controller: true }],
      managedFields: [{ manager: 'm' }],
    },
    spec: {
      nodeName: 'n1',
      selector: { app: 'x' },
      scaleTargetRef: { kind: 'Deployment', name },
      modelID: 'm',
      replicas: 1,
      containers: [{ name: 'c', image: 'i' }],
    },
    status: {
      phase: 'Running',
      podIP: '10.0.0.1',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
      containerStatuses: [{ name: 'c', restartCount: 0 }],
      initContainerStatuses: [{ name: 'i', restartCount: 0 }],
    },
    endpoints: [{ targetRef: { kind: 'Pod', name }, conditions: { ready: true } }],
  } as KubeObject;
}

type Mutation = (o: Record<string, unknown> & KubeObject) => void;
const mutations: Record<string, Mutation> = {
  generation: (o) => void (o.metadata.generation = 2),
  labels: (o) => void (o.metadata.labels = { ...LABELS, 'ripple.dev/x': 'b' }),
  annotations: (o) => void (o.metadata.annotations = { 'a/b': 'd' }),
  finalizers: (o) => void (o.metadata.finalizers = []),
  deletionTimestamp: (o) => void (o.metadata.deletionTimestamp = '2026-01-01T00:00:00Z'),
  owner: (o) => void (o.metadata.ownerReferences = []),
  nodeName: (o) => void ((o.spec as Record<string, unknown>).nodeName = 'n2'),
  selector: (o) => void ((o.spec as Record<string, unknown>).selector = { app: 'y' }),
  scaleTarget: (o) => void ((o.spec as Record<string, unknown>).scaleTargetRef = { kind: 'Deployment', name: 'other' }),
  replicas: (o) => void ((o.spec as Record<string, unknown>).replicas = 2),
  phase: (o) => void ((o.status as Record<string, unknown>).phase = 'Failed'),
  podIP: (o) => void ((o.status as Record<string, unknown>).podIP = '10.0.0.2'),
  ready: (o) => void ((o.status as Record<string, unknown>).conditions = [{ type: 'Ready', status: 'False', lastTransitionTime: '2026-01-02T00:00:00Z' }]),
  restarts: (o) => void ((o.status as Record<string, unknown>).containerStatuses = [{ name: 'c', restartCount: 1 }]),
  initRestarts: (o) => void ((o.status as Record<string, unknown>).initContainerStatuses = [{ name: 'i', restartCount: 1 }]),
  endpointReady: (o) => void (o.endpoints = [{ targetRef: { kind: 'Pod', name: o.metadata.name }, conditions: { ready: false } }]),
  endpointGone: (o) => void (o.endpoints = []),
};

function events(old: KubeObject, now: KubeObject): WatchEvent[] {
  return [
    { type: 'create', object: now },
    { type: 'update', old, object: now },
    { type: 'delete', object: now, synthetic: false },
    { type: 'generic', object: now },
  ];
}

function projectEvent(e: WatchEvent, p: Projection | undefined): WatchEvent {
  return e.type === 'update' ? { ...e, old: project(e.old, p), object: project(e.object, p) } : { ...e, object: project(e.object, p) };
}

/** Every resource's store holds a few rich objects, projected or not. */
function context(projected: boolean): MapContext {
  const objects = ['a', 'b', 'target'].map(rich);
  return {
    list: (resource, namespace, labelSelector) =>
      namespace !== NS ? [] : objects.map((o) => (projected ? project(o, groupProjection(resource, labelSelector)) : o)),
  };
}

function decide(trigger: Trigger, e: WatchEvent, ctx: MapContext): string {
  if (!passes(trigger.predicate, e)) return 'blocked';
  return JSON.stringify(trigger.map(e, ctx).sort());
}

describe("projections of Ripple's triggers", () => {
  it.each(triggers.map(({ fn, trigger }) => [`${fn} ${resourceId(trigger.resource)} ${trigger.labelSelector ?? ''}`, trigger] as const))(
    '%s: predicate and mapper decide the same on projected objects',
    (_name, trigger) => {
      const p = groupProjection(trigger.resource, trigger.labelSelector);
      const whole = context(false);
      const lean = context(true);
      for (const [what, mutate] of Object.entries(mutations)) {
        const old = rich('target');
        const now = structuredClone(old) as Record<string, unknown> & KubeObject;
        now.metadata.resourceVersion = '2';
        mutate(now);
        for (const e of events(old, now)) {
          expect(decide(trigger, projectEvent(e, p), lean), `${what} on ${e.type}`).toBe(decide(trigger, e, whole));
        }
      }
    },
  );

  it('some watches are metadata-only, and nothing keeps managedFields', () => {
    const metadataOnly = triggers.filter(({ trigger }) => groupProjection(trigger.resource, trigger.labelSelector)?.keep.length === 0);
    expect(metadataOnly.map(({ trigger }) => trigger.resource.kind)).toEqual(expect.arrayContaining(['Deployment', 'ControllerRevision']));
    for (const { trigger } of triggers) expect('managedFields' in project(rich('x'), groupProjection(trigger.resource, trigger.labelSelector)).metadata).toBe(false);
  });
});
