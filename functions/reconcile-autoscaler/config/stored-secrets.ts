/**
 * The controller ConfigMap may hold secrets: `PROMETHEUS_BEARER_TOKEN`, `EPP_METRIC_READER_BEARER_TOKEN`,
 * and credentials inside `PROMETHEUS_BASE_URL` (`https://user:password@prometheus`). The parsed
 * configuration is kept in Redis, readable by anything that can read Ripple's keys, so it is stored
 * without them; the cycle takes them from the ConfigMap it reads anyway at its start (config-store.ts),
 * so they are never older than the configuration they belong to.
 */
import { withoutCredentials } from '../../../base/redact.js';
import type { ControllerConfig, PrometheusSettings } from './controller-config.js';
import { httpUrlText } from './values.js';

/** The configuration as it may be written to Redis: no tokens, no credentials in the URL. */
export function storableControllerConfig(config: ControllerConfig): ControllerConfig {
  const { bearerToken: _token, ...prometheus } = config.prometheus;
  const { eppMetricReaderBearerToken: _epp, ...rest } = config;
  return {
    ...rest,
    prometheus: { ...prometheus, ...(prometheus.baseUrl !== undefined ? { baseUrl: withoutCredentials(prometheus.baseUrl) } : {}) },
  };
}

/** Whether a configuration holds anything storableControllerConfig would take out. */
export function holdsSecrets(config: ControllerConfig): boolean {
  const p = config.prometheus;
  return p.bearerToken !== undefined || config.eppMetricReaderBearerToken !== undefined || (p.baseUrl !== undefined && withoutCredentials(p.baseUrl) !== p.baseUrl);
}

/** What the stored configuration leaves out, as the controller ConfigMap holds it now. */
export interface PrometheusSecrets {
  /** PROMETHEUS_BASE_URL when it carries credentials. */
  baseUrl?: string;
  bearerToken?: string;
}

/** Read with the rules parseControllerConfig applies: a blank entry is no entry. */
export function prometheusSecretsOf(data: Readonly<Record<string, string | undefined>> | undefined): PrometheusSecrets {
  const out: PrometheusSecrets = {};
  const token = data?.['PROMETHEUS_BEARER_TOKEN'];
  if (token !== undefined && token.trim() !== '') out.bearerToken = token;
  const url = data?.['PROMETHEUS_BASE_URL'];
  if (url !== undefined && url.trim() !== '') {
    const parsed = httpUrlText.safeParse(url);
    if (parsed.success && withoutCredentials(parsed.data) !== parsed.data) out.baseUrl = parsed.data;
  }
  return out;
}

/**
 * The stored settings with the secrets put back. The URL's credentials are used only with the URL
 * they came with: when the ConfigMap's URL is unusable and the last good one is kept, the
 * credentials of the new, unusable one do not belong to it.
 */
export function withPrometheusSecrets(stored: PrometheusSettings, secrets: PrometheusSecrets): PrometheusSettings {
  const out: PrometheusSettings = { ...stored };
  if (secrets.bearerToken !== undefined) out.bearerToken = secrets.bearerToken;
  if (secrets.baseUrl !== undefined && stored.baseUrl !== undefined && withoutCredentials(secrets.baseUrl) === stored.baseUrl) out.baseUrl = secrets.baseUrl;
  return out;
}
