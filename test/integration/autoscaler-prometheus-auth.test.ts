import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { condition, createDeployment, createVA, loadPods, upsertConfigMap, waitForCondition } from './autoscaler-helpers.js';
import { CTRL, STEADY, startLoop, type Loop } from './autoscaler-loop.js';

// bcrypt of "ripple-test" (Prometheus's web config stores only the hash).
const BASIC_AUTH = { user: 'wva', password: 'ripple-test', bcryptHash: '$2b$12$5O1uq/p7q59YakvvMiuppeTj3ywwuFcVI1.ce/M5HEJ3WYXzX7HGm' };

// Issue 14 scenario 7 (seed 002 §3.2): Prometheus refusing the credentials is an auth problem —
// AuthValid=False, Ready=False/AuthFailed — not a connectivity one. The Prometheus here requires
// basic auth; Ripple is first given a bearer token it does not accept, then the right credentials.
describe('reconcile-autoscaler: Prometheus 401 is AuthFailed, not connectivity (issue 14 scenario 7)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-auth', {
      prometheus: { basicAuth: BASIC_AUTH },
      prometheusInConfigMap: true,
      controllerConfig: { PROMETHEUS_BEARER_TOKEN: 'not-a-valid-token' },
    });
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it('a refused token: AuthValid=False/AuthFailed, Ready=False/AuthFailed, DependenciesReachable stays True; no secret in the message', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'au', 1);
    await createVA(sb, 'au', { model: 'au-model' });
    await loadPods(sb, emitter, 'au', 'au-model', 1, STEADY);
    await loop.cycle();
    const va = await waitForCondition(sb, 'au', 'AuthValid', 'False', 'AuthFailed');
    expect(condition(va.status, 'Ready')).toMatchObject({ status: 'False', reason: 'AuthFailed' });
    expect(condition(va.status, 'DependenciesReachable')?.status).toBe('True');
    expect(va.status?.phase).toBe('Degraded');
    expect(condition(va.status, 'AuthValid')?.message).toContain('401');
    expect(condition(va.status, 'MetricsAvailable')).toMatchObject({ status: 'False', reason: 'PrometheusError' });
    expect(JSON.stringify(va.status)).not.toContain('not-a-valid-token');
  });

  it('the right credentials: AuthValid=True and Ready at the next cycle', async () => {
    const { sb } = loop;
    const withCredentials = loop.prometheus.url.replace('http://', `http://${BASIC_AUTH.user}:${BASIC_AUTH.password}@`);
    await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '1h', PROMETHEUS_BASE_URL: withCredentials });
    await loop.cycle();
    const va = await waitForCondition(sb, 'au', 'Ready', 'True');
    expect(condition(va.status, 'AuthValid')?.status).toBe('True');
  });
});
