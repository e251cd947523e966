import { describe, expect, it } from 'vitest';
import { parseControllerConfig } from './controller-config.js';
import { parseSaturationConfig } from './saturation-config.js';
import { parseScaleToZeroConfig } from './scale-to-zero-config.js';
import { initialConfig, parseStoredConfig, readStoredConfigText, type StoredConfig } from './stored.js';

describe('the configuration as stored in Redis', () => {
  it('round-trips parsed ConfigMaps through JSON', () => {
    const config: StoredConfig = {
      controller: parseControllerConfig({ GLOBAL_OPT_INTERVAL: '2s', PROMETHEUS_BASE_URL: 'http://prom:9090', WVA_SCALE_TO_ZERO: 'true' }).config,
      saturation: parseSaturationConfig({
        default: 'kvCacheThreshold: 0.7\nqueueLengthThreshold: 4',
        lab: 'model_id: ibm/granite\nnamespace: lab\nkvSpareTrigger: 0.2',
      }).config,
      scaleToZero: parseScaleToZeroConfig({ default: 'enable_scale_to_zero: true\nretention_period: 5m' }).config,
      versions: { controller: 'u1/10', saturation: 'u2/11', scaleToZero: 'absent' },
      refreshedAt: '2026-01-29T10:00:00.000Z',
    };
    expect(parseStoredConfig(JSON.stringify(config))).toEqual(config);
  });

  it('starts from the documented defaults and rejects what it cannot read', () => {
    const initial = initialConfig(new Date('2026-01-29T10:00:00Z'));
    expect(initial.controller.globalOptIntervalMs).toBe(60_000);
    expect(initial.saturation.default).toMatchObject({ kvCacheThreshold: 0.8, queueLengthThreshold: 5, kvSpareTrigger: 0.1, queueSpareTrigger: 3 });
    expect(parseStoredConfig(JSON.stringify(initial))).toEqual(initial);
    expect(parseStoredConfig(null)).toBeUndefined();
    expect(parseStoredConfig('{not json')).toBeUndefined();
    expect(parseStoredConfig(JSON.stringify({ ...initial, controller: { ...initial.controller, globalOptIntervalMs: 5 } }))).toBeUndefined();
  });

  it('never hands out secrets a record written by an older version held, and says to rewrite it', () => {
    const initial = initialConfig(new Date('2026-01-29T10:00:00Z'));
    const old = {
      ...initial,
      controller: { ...initial.controller, prometheus: { tlsInsecureSkipVerify: false, baseUrl: 'https://u:p@prom:9090', bearerToken: 's3cr3t' }, eppMetricReaderBearerToken: 'epp' },
    };
    const read = readStoredConfigText(JSON.stringify(old));
    expect(read.heldSecrets).toBe(true);
    expect(read.config?.controller.prometheus).toEqual({ tlsInsecureSkipVerify: false, baseUrl: 'https://prom:9090' });
    expect(JSON.stringify(read.config)).not.toMatch(/s3cr3t|epp|u:p@/);
    expect(readStoredConfigText(JSON.stringify(initial)).heldSecrets).toBe(false);
  });
});
