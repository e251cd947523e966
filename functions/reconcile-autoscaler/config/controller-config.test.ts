import { describe, expect, it } from 'vitest';
import { DEFAULT_CONTROLLER_CONFIG, effectivePrometheusSettings, parseControllerConfig } from './controller-config.js';
import { describeIssue } from './issues.js';
import { WVA_CONTROLLER_DATA } from '../../../test/fixtures/wva-samples.js';

// WVA's config/manager/configmap.yaml data, as shipped.
const UPSTREAM_DATA = WVA_CONTROLLER_DATA;

describe('parseControllerConfig', () => {
  it('reads the upstream ConfigMap without issues', () => {
    const { config, issues, ignoredKeys } = parseControllerConfig(UPSTREAM_DATA);
    expect(issues).toEqual([]);
    expect(ignoredKeys).toEqual([]);
    expect(config.prometheus).toEqual({
      baseUrl: UPSTREAM_DATA.PROMETHEUS_BASE_URL,
      tlsInsecureSkipVerify: true,
    });
    expect(config.globalOptIntervalMs).toBe(60_000);
    expect(config.scaleToZero).toBe(false);
    expect(config.metricsFreshness).toEqual(DEFAULT_CONTROLLER_CONFIG.metricsFreshness);
    expect(config.nodeSelector).toBeUndefined();
  });

  it('uses the defaults when the ConfigMap is missing', () => {
    const { config, issues } = parseControllerConfig(undefined);
    expect(config).toEqual(DEFAULT_CONTROLLER_CONFIG);
    expect(config.globalOptIntervalMs).toBe(60_000);
    expect(issues).toEqual([]);
  });

  it('honours GLOBAL_OPT_INTERVAL in Go duration syntax', () => {
    expect(parseControllerConfig({ GLOBAL_OPT_INTERVAL: '1m30s' }).config.globalOptIntervalMs).toBe(90_000);
    expect(parseControllerConfig({ GLOBAL_OPT_INTERVAL: '15s' }).config.globalOptIntervalMs).toBe(15_000);
  });

  it('reports an unparsable entry by key and keeps the last good value', () => {
    const first = parseControllerConfig({ GLOBAL_OPT_INTERVAL: '30s', WVA_SCALE_TO_ZERO: 'true' });
    const second = parseControllerConfig({ GLOBAL_OPT_INTERVAL: 'soon', WVA_SCALE_TO_ZERO: 'true' }, first.config);
    expect(second.config.globalOptIntervalMs).toBe(30_000);
    expect(second.config.scaleToZero).toBe(true);
    expect(second.issues).toEqual([
      {
        configMap: 'workload-variant-autoscaler-variantautoscaling-config',
        key: 'GLOBAL_OPT_INTERVAL',
        severity: 'error',
        message: '"soon" must be a duration such as "60s", "1m30s" or "500ms"',
        fallback: 'last-good',
      },
    ]);
    expect(describeIssue(second.issues[0]!)).toBe(
      'workload-variant-autoscaler-variantautoscaling-config[GLOBAL_OPT_INTERVAL]: "soon" must be a duration such as "60s", "1m30s" or "500ms" (keeping the last good value)',
    );
  });

  it('falls back to the default for a bad entry on first read', () => {
    const { config, issues } = parseControllerConfig({ GLOBAL_OPT_INTERVAL: '10ms', WVA_SCALE_TO_ZERO: 'maybe' });
    expect(config.globalOptIntervalMs).toBe(60_000);
    expect(config.scaleToZero).toBe(false);
    expect(issues.map((i) => [i.key, i.message, i.fallback])).toEqual([
      ['GLOBAL_OPT_INTERVAL', '"10ms" must be at least 1s', 'default'],
      ['WVA_SCALE_TO_ZERO', '"maybe" must be true or false', 'default'],
    ]);
  });

  it('returns a removed key to its default rather than the last value', () => {
    const first = parseControllerConfig({ GLOBAL_OPT_INTERVAL: '30s' });
    expect(parseControllerConfig({}, first.config).config.globalOptIntervalMs).toBe(60_000);
  });

  it('never echoes a bearer token in an issue', () => {
    const first = parseControllerConfig({ PROMETHEUS_BASE_URL: 'ftp://x', PROMETHEUS_BEARER_TOKEN: 's3cr3t' });
    expect(first.config.prometheus.bearerToken).toBe('s3cr3t');
    expect(first.issues).toHaveLength(1);
    expect(first.issues[0]?.message).toBe('"ftp://x" must be an http:// or https:// URL');
    expect(JSON.stringify(first.issues)).not.toContain('s3cr3t');
  });

  it('never echoes URL credentials in an issue', () => {
    const { issues } = parseControllerConfig({ PROMETHEUS_BASE_URL: 'ftp://wva:hunter2@prometheus:9090' });
    expect(issues[0]?.message).toBe('"ftp://[redacted]@prometheus:9090" must be an http:// or https:// URL');
  });

  it('accepts http:// for a local Prometheus and trims a trailing slash', () => {
    expect(parseControllerConfig({ PROMETHEUS_BASE_URL: 'http://127.0.0.1:9090/' }).config.prometheus.baseUrl).toBe('http://127.0.0.1:9090');
  });

  it('lists keys it does not read', () => {
    expect(parseControllerConfig({ EPP_METRICS_CACHE_TTL: '15s', GLOBAL_OPT_INTERVAL: '60s' }).ignoredKeys).toEqual(['EPP_METRICS_CACHE_TTL']);
  });

  it('reads the freshness limits; the cache keys and the stale threshold have no effect and are named as such', () => {
    const r = parseControllerConfig(UPSTREAM_DATA);
    expect(r.keysWithoutEffect).toEqual([
      'PROMETHEUS_METRICS_CACHE_CLEANUP_INTERVAL',
      'PROMETHEUS_METRICS_CACHE_ENABLED',
      'PROMETHEUS_METRICS_CACHE_FETCH_INTERVAL',
      'PROMETHEUS_METRICS_CACHE_MAX_SIZE',
      'PROMETHEUS_METRICS_CACHE_STALE_THRESHOLD',
      'PROMETHEUS_METRICS_CACHE_TTL',
    ]);
    const custom = parseControllerConfig({ PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD: '20s', PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD: '90s', PROMETHEUS_METRICS_CACHE_TTL: 'junk' });
    expect(custom.config.metricsFreshness).toEqual({ freshThresholdMs: 20_000, unavailableThresholdMs: 90_000 });
    // A key without effect is not validated: nothing to keep a last good value of.
    expect(custom.issues).toEqual([]);
    expect(custom.ignoredKeys).toEqual([]);
  });

  it('a fresh threshold of 0 is refused (no query window); an unavailable threshold not above it leaves no room for stale', () => {
    const zero = parseControllerConfig({ PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD: '0s' });
    expect(zero.config.metricsFreshness.freshThresholdMs).toBe(60_000);
    expect(zero.issues.map(describeIssue)).toEqual([
      'workload-variant-autoscaler-variantautoscaling-config[PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD]: "0s" must be at least 1s (using the default)',
    ]);
    const inverted = parseControllerConfig({ PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD: '2m', PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD: '1m' });
    expect(inverted.config.metricsFreshness).toEqual({ freshThresholdMs: 120_000, unavailableThresholdMs: 120_000 });
    expect(inverted.issues).toMatchObject([{ key: 'PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD', severity: 'warning' }]);
  });

  it.each([['true', true], ['True', true], ['yes', true], ['1', true], ['false', false], ['NO', false], ['0', false]])(
    'reads boolean %s',
    (text, value) => {
      expect(parseControllerConfig({ WVA_LIMITED_MODE: text }).config.limitedMode).toBe(value);
    },
  );
});

describe('effectivePrometheusSettings', () => {
  it('prefers the environment when PROMETHEUS_BASE_URL is set there', () => {
    const { config } = parseControllerConfig({ PROMETHEUS_BASE_URL: 'https://from-cm:9090', PROMETHEUS_TLS_INSECURE_SKIP_VERIFY: 'true' });
    const fromEnv = effectivePrometheusSettings(config, { PROMETHEUS_BASE_URL: 'http://from-env:9090' });
    expect(fromEnv.source).toBe('env');
    expect(fromEnv.settings).toEqual({ baseUrl: 'http://from-env:9090', tlsInsecureSkipVerify: false });
    const fromCm = effectivePrometheusSettings(config, {});
    expect(fromCm.source).toBe('configmap');
    expect(fromCm.settings.baseUrl).toBe('https://from-cm:9090');
  });
});
