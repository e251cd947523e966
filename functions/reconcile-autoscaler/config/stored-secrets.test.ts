import { describe, expect, it } from 'vitest';
import { parseControllerConfig } from './controller-config.js';
import { holdsSecrets, prometheusSecretsOf, storableControllerConfig, withPrometheusSecrets } from './stored-secrets.js';

const data = {
  PROMETHEUS_BASE_URL: 'https://wva:pa%40ss@prometheus.monitoring:9090/',
  PROMETHEUS_BEARER_TOKEN: 's3cr3t-token',
  EPP_METRIC_READER_BEARER_TOKEN: 'epp-token',
  GLOBAL_OPT_INTERVAL: '30s',
};

describe('secrets of the controller ConfigMap', () => {
  it('are left out of what is stored in Redis', () => {
    const parsed = parseControllerConfig(data).config;
    expect(holdsSecrets(parsed)).toBe(true);
    const stored = storableControllerConfig(parsed);
    const text = JSON.stringify(stored);
    for (const secret of ['s3cr3t-token', 'epp-token', 'wva', 'pa%40ss']) expect(text).not.toContain(secret);
    expect(stored.prometheus.baseUrl).toBe('https://prometheus.monitoring:9090');
    expect(stored.globalOptIntervalMs).toBe(30_000);
    expect(holdsSecrets(stored)).toBe(false);
  });

  it('are put back from the ConfigMap as it is now', () => {
    const stored = storableControllerConfig(parseControllerConfig(data).config);
    const settings = withPrometheusSecrets(stored.prometheus, prometheusSecretsOf(data));
    expect(settings.baseUrl).toBe('https://wva:pa%40ss@prometheus.monitoring:9090');
    expect(settings.bearerToken).toBe('s3cr3t-token');
    // The token removed from the ConfigMap is gone, not remembered.
    expect(withPrometheusSecrets(stored.prometheus, prometheusSecretsOf({ ...data, PROMETHEUS_BEARER_TOKEN: ' ' })).bearerToken).toBeUndefined();
  });

  it('never lend a new URL’s credentials to the last good URL', () => {
    const stored = storableControllerConfig(parseControllerConfig(data).config);
    const moved = prometheusSecretsOf({ PROMETHEUS_BASE_URL: 'https://other:pw@elsewhere:9090' });
    expect(withPrometheusSecrets(stored.prometheus, moved).baseUrl).toBe('https://prometheus.monitoring:9090');
    expect(prometheusSecretsOf({ PROMETHEUS_BASE_URL: 'http://plain:9090' })).toEqual({});
    expect(prometheusSecretsOf({ PROMETHEUS_BASE_URL: 'ftp://u:p@x' })).toEqual({});
  });
});
