import { describe, expect, it } from 'vitest';
import { modelServingConfig } from './config.js';

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
