import { describe, expect, it } from 'vitest';
import { modelServingConfig } from './config.js';
import { definition } from './definition.js';

describe('MODELSERVING_CHILDREN_CACHE', () => {
  it('is on by default in a worker', () => {
    expect(modelServingConfig({}).MODELSERVING_CHILDREN_CACHE).toBe('true');
  });

  it('is off by default when served as an HTTP function (Knative sets K_SERVICE, OpenFaaS runs RIPPLE_MODE=serve)', () => {
    expect(modelServingConfig({ K_SERVICE: 'reconcile-modelserving' }).MODELSERVING_CHILDREN_CACHE).toBe('false');
    expect(modelServingConfig({ RIPPLE_MODE: 'serve' }).MODELSERVING_CHILDREN_CACHE).toBe('false');
    expect(modelServingConfig({ RIPPLE_MODE: 'worker' }).MODELSERVING_CHILDREN_CACHE).toBe('true');
  });

  it('is what it is set to, wherever the function runs', () => {
    expect(modelServingConfig({ K_SERVICE: 'x', MODELSERVING_CHILDREN_CACHE: 'true' }).MODELSERVING_CHILDREN_CACHE).toBe('true');
    expect(modelServingConfig({ MODELSERVING_CHILDREN_CACHE: 'false' }).MODELSERVING_CHILDREN_CACHE).toBe('false');
    expect(() => modelServingConfig({ MODELSERVING_CHILDREN_CACHE: 'yes' })).toThrow(/MODELSERVING_CHILDREN_CACHE must be/);
  });
});

describe('MODELSERVING_CHILD_BATCH_MS', () => {
  it("batches the Pod and Service triggers (100 ms unless set), never the ModelServing's own", () => {
    const batches = (env: Record<string, string>) => Object.fromEntries(definition(env).triggers.map((t) => [t.resource.plural, t.batchMs ?? 0]));
    expect(batches({})).toMatchObject({ modelservings: 0, pods: 100, services: 100 });
    expect(batches({ MODELSERVING_CHILD_BATCH_MS: '0' })).toMatchObject({ modelservings: 0, pods: 0, services: 0 });
    expect(batches({ MODELSERVING_CHILD_BATCH_MS: '250' })).toMatchObject({ pods: 250, services: 250 });
    expect(() => modelServingConfig({ MODELSERVING_CHILD_BATCH_MS: '-1' })).toThrow(/MODELSERVING_CHILD_BATCH_MS/);
  });
});
