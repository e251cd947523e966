import { describe, expect, it } from 'vitest';
import { parseScaleToZeroConfig, scaleToZeroPolicyFor } from './scale-to-zero-config.js';

describe('parseScaleToZeroConfig', () => {
  it('reads the upstream sample (default entry on, 15m)', () => {
    const { config, issues } = parseScaleToZeroConfig({ default: 'enable_scale_to_zero: true\nretention_period: "15m"\n' });
    expect(issues).toEqual([]);
    expect(scaleToZeroPolicyFor(config, 'any/model', 'ns', false)).toEqual({ enabled: true, retentionMs: 900_000 });
  });

  it('follows model+namespace > model > default > controller flag, retention defaulting to 10m', () => {
    const { config } = parseScaleToZeroConfig({
      default: 'enable_scale_to_zero: false',
      llama: 'model_id: meta/llama\nenable_scale_to_zero: true\nretention_period: 5m',
      'llama-prod': 'model_id: meta/llama\nnamespace: prod\nenable_scale_to_zero: false',
      granite: 'model_id: ibm/granite\nretention_period: 1h',
    });
    expect(scaleToZeroPolicyFor(config, 'meta/llama', 'dev', false)).toEqual({ enabled: true, retentionMs: 300_000 });
    expect(scaleToZeroPolicyFor(config, 'meta/llama', 'prod', false)).toEqual({ enabled: false, retentionMs: 300_000 });
    expect(scaleToZeroPolicyFor(config, 'ibm/granite', 'dev', true)).toEqual({ enabled: false, retentionMs: 3_600_000 });
    expect(scaleToZeroPolicyFor(parseScaleToZeroConfig(undefined).config, 'x', 'y', true)).toEqual({ enabled: true, retentionMs: 600_000 });
  });

  it('reports bad entries by key, keeping the last good one', () => {
    const first = parseScaleToZeroConfig({ llama: 'model_id: meta/llama\nenable_scale_to_zero: true' });
    const { config, issues } = parseScaleToZeroConfig(
      { llama: 'model_id: meta/llama\nenable_scale_to_zero: sometimes', nomodel: 'enable_scale_to_zero: true', slow: 'model_id: m\nretention_period: forever' },
      first.config,
    );
    expect(issues.map((i) => [i.key, i.message, i.fallback])).toEqual([
      ['llama', 'enable_scale_to_zero must be true or false', 'last-good'],
      ['nomodel', 'an entry other than default must name model_id', 'skipped'],
      ['slow', 'retention_period "forever" must be a positive duration such as "10m"', 'skipped'],
    ]);
    expect(scaleToZeroPolicyFor(config, 'meta/llama', 'ns', false).enabled).toBe(true);
  });
});
