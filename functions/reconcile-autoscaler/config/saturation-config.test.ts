import { describe, expect, it } from 'vitest';
import { BUILT_IN_SATURATION_THRESHOLDS, parseSaturationConfig, saturationThresholdsFor } from './saturation-config.js';

// deploy/configmap-saturation-scaling.yaml's default entry and the reference's override example.
const DEFAULT_DOC = `kvCacheThreshold: 0.80
queueLengthThreshold: 5
kvSpareTrigger: 0.1
queueSpareTrigger: 3
# GPU limiter
enableLimiter: false
`;
const GRANITE = `model_id: ibm/granite-13b
namespace: lab-namespace
kvCacheThreshold: 0.75
`;

describe('parseSaturationConfig', () => {
  it('reads the upstream ConfigMap', () => {
    const { config, issues } = parseSaturationConfig({ default: DEFAULT_DOC, 'granite-override': GRANITE });
    expect(issues).toEqual([]);
    expect(config.defaultSource).toBe('configmap');
    expect(config.default).toEqual({ kvCacheThreshold: 0.8, queueLengthThreshold: 5, kvSpareTrigger: 0.1, queueSpareTrigger: 3, enableLimiter: false, analyzerName: '', scaleUpThreshold: 0.85, scaleDownBoundary: 0.7 });
    expect(config.overrides).toEqual([
      { key: 'granite-override', modelID: 'ibm/granite-13b', namespace: 'lab-namespace', thresholds: { ...config.default, kvCacheThreshold: 0.75 } },
    ]);
  });

  it('falls back to the documented built-in thresholds without a ConfigMap or default entry', () => {
    expect(parseSaturationConfig(undefined).config.default).toEqual(BUILT_IN_SATURATION_THRESHOLDS);
    const { config } = parseSaturationConfig({ 'granite-override': GRANITE });
    expect(config.defaultSource).toBe('built-in');
    expect(config.default).toEqual({ kvCacheThreshold: 0.8, queueLengthThreshold: 5, kvSpareTrigger: 0.1, queueSpareTrigger: 3, enableLimiter: false, analyzerName: '', scaleUpThreshold: 0.85, scaleDownBoundary: 0.7 });
    expect(config.overrides[0]?.thresholds.kvCacheThreshold).toBe(0.75);
  });

  it('fills fields missing from default with the built-in values (default: {} is valid)', () => {
    const { config, issues } = parseSaturationConfig({ default: '{}' });
    expect(issues).toEqual([]);
    expect(config.default).toEqual(BUILT_IN_SATURATION_THRESHOLDS);
    expect(parseSaturationConfig({ default: 'queueLengthThreshold: 10' }).config.default.queueLengthThreshold).toBe(10);
  });

  it('reports a bad entry with its key and skips it', () => {
    const { config, issues } = parseSaturationConfig({
      default: DEFAULT_DOC,
      'invalid-config': 'model_id: test/model\nnamespace: test\nkvCacheThreshold: 1.5\n',
    });
    expect(config.overrides).toEqual([]);
    expect(issues).toEqual([
      { configMap: 'saturation-scaling-config', key: 'invalid-config', severity: 'error', message: 'kvCacheThreshold must be between 0 and 1', fallback: 'skipped' },
    ]);
  });

  it('keeps the last good value of an entry that became unparsable', () => {
    const first = parseSaturationConfig({ default: 'kvCacheThreshold: 0.7\nkvSpareTrigger: 0.2', 'granite-override': GRANITE });
    const second = parseSaturationConfig({ default: 'kvCacheThreshold: [oops', 'granite-override': 'model_id: ibm/granite-13b\nkvCacheThreshold: high' }, first.config);
    expect(second.config.default).toEqual(first.config.default);
    expect(second.config.overrides).toEqual(first.config.overrides);
    expect(second.issues.map((i) => [i.key, i.fallback])).toEqual([
      ['default', 'last-good'],
      ['granite-override', 'last-good'],
    ]);
    expect(second.issues[0]?.message).toMatch(/^not valid YAML: /);
    expect(second.issues[1]?.message).toBe('kvCacheThreshold must be a number between 0 and 1');
  });

  it('uses the built-in default when a bad default has no last good value', () => {
    const { config, issues } = parseSaturationConfig({ default: 'kvCacheThreshold: 0.05\nkvSpareTrigger: 0.1' });
    expect(config.default).toEqual(BUILT_IN_SATURATION_THRESHOLDS);
    expect(issues).toEqual([
      { configMap: 'saturation-scaling-config', key: 'default', severity: 'error', message: 'kvCacheThreshold (0.05) must be at least kvSpareTrigger (0.1)', fallback: 'default' },
    ]);
  });

  it.each([
    ['queueLengthThreshold: -1', 'queueLengthThreshold must be 0 or more'],
    ['kvSpareTrigger: 2', 'kvSpareTrigger must be between 0 and 1'],
    ['queueSpareTrigger: "3"', 'queueSpareTrigger must be a number, 0 or more'],
    ['enableLimiter: maybe', 'enableLimiter must be true or false'],
    ['- 1\n- 2', 'must be a YAML mapping of threshold names to values'],
  ])('rejects %j', (doc, message) => {
    const { issues } = parseSaturationConfig({ default: doc });
    expect(issues[0]?.message).toBe(message);
  });

  it('checks a partial override against the default it inherits', () => {
    // Alone, kvSpareTrigger 0.15 has no kvCacheThreshold; merged with default's 0.80 it is fine.
    const ok = parseSaturationConfig({ default: DEFAULT_DOC, llama: 'model_id: meta/llama-70b\nnamespace: production\nkvSpareTrigger: 0.15' });
    expect(ok.issues).toEqual([]);
    expect(ok.config.overrides[0]?.thresholds).toMatchObject({ kvCacheThreshold: 0.8, kvSpareTrigger: 0.15 });
    const bad = parseSaturationConfig({ default: DEFAULT_DOC, llama: 'model_id: meta/llama-70b\nnamespace: production\nkvSpareTrigger: 0.9' });
    expect(bad.issues[0]).toMatchObject({ key: 'llama', message: 'kvCacheThreshold (0.8) must be at least kvSpareTrigger (0.9)', fallback: 'skipped' });
  });

  it('requires model_id and namespace on an override', () => {
    const { issues, config } = parseSaturationConfig({ x: 'model_id: m\nkvCacheThreshold: 0.7' });
    expect(config.overrides).toEqual([]);
    expect(issues[0]).toMatchObject({ key: 'x', message: 'an override must name both model_id and namespace' });
  });

  it('lets the first key win when two overrides name the same model and namespace', () => {
    const { config, issues } = parseSaturationConfig({
      b: 'model_id: m\nnamespace: ns\nqueueLengthThreshold: 20',
      a: 'model_id: m\nnamespace: ns\nqueueLengthThreshold: 10',
    });
    expect(config.overrides.map((o) => [o.key, o.thresholds.queueLengthThreshold])).toEqual([['a', 10]]);
    expect(issues[0]).toMatchObject({ key: 'b', message: 'model_id m in namespace ns is already overridden by key a' });
  });

  it("warns about unknown fields but keeps the entry; reads Saturation V2's keys (issue 31 item 6)", () => {
    const { config, issues } = parseSaturationConfig({ default: 'kvCacheThreshhold: 0.9\nscaleUpThreshold: 0.9\nscaleDownBoundary: 0.6\nanalyzerName: saturation' });
    expect(config.default).toEqual({ ...BUILT_IN_SATURATION_THRESHOLDS, analyzerName: 'saturation', scaleUpThreshold: 0.9, scaleDownBoundary: 0.6 });
    expect(issues).toEqual([
      { configMap: 'saturation-scaling-config', key: 'default', severity: 'warning', message: 'unknown field(s) ignored: kvCacheThreshhold', fallback: 'none' },
    ]);
  });
});

describe('saturationThresholdsFor (per-model overrides)', () => {
  const { config } = parseSaturationConfig({
    default: DEFAULT_DOC,
    'granite-override': GRANITE,
    'llama-production': 'model_id: meta/llama-70b\nnamespace: production\nqueueLengthThreshold: 20\nqueueSpareTrigger: 10',
  });

  it('applies the override to its model in its namespace only', () => {
    expect(saturationThresholdsFor(config, 'ibm/granite-13b', 'lab-namespace')).toEqual({
      thresholds: { kvCacheThreshold: 0.75, queueLengthThreshold: 5, kvSpareTrigger: 0.1, queueSpareTrigger: 3, enableLimiter: false, analyzerName: '', scaleUpThreshold: 0.85, scaleDownBoundary: 0.7 },
      overrideKey: 'granite-override',
    });
    expect(saturationThresholdsFor(config, 'ibm/granite-13b', 'other').thresholds).toEqual(config.default);
    expect(saturationThresholdsFor(config, 'meta/llama-70b', 'production').thresholds).toMatchObject({ queueLengthThreshold: 20, queueSpareTrigger: 10, kvCacheThreshold: 0.8 });
  });
});
