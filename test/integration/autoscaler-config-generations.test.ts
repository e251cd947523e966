import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStoredConfig } from '../../functions/reconcile-autoscaler/config-store.js';
import { definition } from '../../functions/reconcile-autoscaler/definition.js';
import { CONFIG_KEY, OPTIMIZE_KEY } from '../../functions/reconcile-autoscaler/keys.js';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { parseObjectKey } from '../../queue/keys.js';
import { eventRequestsKey } from '../../runtime/event-sink.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { autoscalerEnv, createDeployment, createVA, recordedDefinition, upsertConfigMap, type RecordedReconcile } from './autoscaler-helpers.js';

// WVA's names since v0.5.1 (a current install) and seed 003's (v0.5.0).
const WVA_SAT = 'wva-saturation-scaling-config';
const WVA_CTRL = 'wva-variantautoscaling-config';
const SEED_SAT = 'saturation-scaling-config';

// Issue 31 item 1: a current install's ConfigMaps are honoured, the newer name wins over seed 003's
// when both exist (and an Event on the ignored one says so), and both are watched with seed 003's
// predicate: a change reaches the configuration through `@config`, reconciling no VA.
describe('reconcile-autoscaler: both generations of ConfigMap names (issue 31 item 1)', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  let calls: RecordedReconcile[];

  beforeAll(async () => {
    sb = await openSandbox('as-cfg-gen');
    const env = autoscalerEnv(sb);
    const recorded = recordedDefinition(env);
    calls = recorded.calls;
    ripple = await startRipple(sb, [recorded.def], { env });
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  const stored = () => readStoredConfig({ redis: sb.redis, prefix: sb.prefix });
  const events = async (name: string) =>
    (await sb.redis.lrange(eventRequestsKey(sb.prefix, `${sb.namespace}/ConfigMap/${name}`), 0, -1)).map((t) => JSON.parse(t) as { reason: string; type: string; message: string });

  it("a current install's wva-* ConfigMaps are read, and their Create and Update reach the configuration through @config", async () => {
    await upsertConfigMap(sb, WVA_CTRL, { GLOBAL_OPT_INTERVAL: '45s' });
    await upsertConfigMap(sb, WVA_SAT, { default: 'kvCacheThreshold: 0.6\nkvSpareTrigger: 0.05\n' });
    await waitFor('the wva-* ConfigMaps in the stored configuration', 20_000, async () => {
      const c = await stored();
      return c?.saturation.default.kvCacheThreshold === 0.6 && c.controller.globalOptIntervalMs === 45_000;
    });
    await upsertConfigMap(sb, WVA_SAT, { default: 'kvCacheThreshold: 0.65\n' });
    await waitFor('the update of wva-saturation-scaling-config', 20_000, async () => (await stored())?.saturation.default.kvCacheThreshold === 0.65);
    expect(calls.every((c) => c.key.startsWith('@'))).toBe(true);
    expect(calls.some((c) => c.key === CONFIG_KEY)).toBe(true);
  });

  it("both generations: the wva-* one wins, and a Normal Event on seed 003's one says it is not read", async () => {
    await upsertConfigMap(sb, SEED_SAT, { default: 'kvCacheThreshold: 0.9\n' });
    const shadowed = await waitFor('the ConfigMapShadowed Event', 20_000, async () => (await events(SEED_SAT)).find((e) => e.reason === 'ConfigMapShadowed'));
    expect(shadowed.type).toBe('Normal');
    expect(shadowed.message).toBe(
      `${SEED_SAT} is not read: ${WVA_SAT} exists too and wins (WVA's name since v0.5.1); move its keys to ${WVA_SAT} or delete one of them`,
    );
    expect((await stored())?.saturation.default.kvCacheThreshold).toBe(0.65);

    // The newer one gone (its Delete is blocked, as seed 003 says): the next refresh reads seed 003's.
    await sb.core.deleteNamespacedConfigMap({ name: WVA_SAT, namespace: sb.namespace });
    await upsertConfigMap(sb, SEED_SAT, { default: 'kvCacheThreshold: 0.85\n' });
    await waitFor("seed 003's saturation ConfigMap in use", 20_000, async () => (await stored())?.saturation.default.kvCacheThreshold === 0.85);
  });
});

// Namespace-local saturation ConfigMaps (WVA since v0.5.1): `wva-saturation-scaling-config` in a VA's
// namespace replaces the controller namespace's saturation configuration for that namespace's models.
// The controller namespace is a second namespace here; cycles are run by hand (no watch is involved).
describe('reconcile-autoscaler: namespace-local saturation ConfigMaps (issue 31 item 1)', () => {
  let sb: TestSandbox;
  let host: FunctionHost;
  let controllerNs: string;
  const log = createLogger('autoscaler-config-local', process.env.LOG_LEVEL ?? 'warn');

  beforeAll(async () => {
    sb = await openSandbox('as-cfg-local');
    controllerNs = `${sb.namespace}-wva`;
    await sb.core.createNamespace({ body: { metadata: { name: controllerNs, labels: { 'ripple.dev/test': 'true' } } } });
    const env = { ...process.env, ...autoscalerEnv(sb, { POD_NAMESPACE: controllerNs }) };
    host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: [definition(env)], log, env });
  });
  afterAll(async () => {
    await host?.close();
    await sb?.core.deleteNamespace({ name: controllerNs }).catch(() => undefined);
    await sb?.cleanup();
  });

  async function cycleThresholds(): Promise<number | undefined> {
    await definition({ ...process.env, ...autoscalerEnv(sb, { POD_NAMESPACE: controllerNs }) }).reconcile({ key: OPTIMIZE_KEY, reason: 'test', ...parseObjectKey(OPTIMIZE_KEY) }, host.context(log));
    const record = await readCycleRecord(sb.redis, sb.prefix);
    return record?.models.find((m) => m.key === `nl-model|${sb.namespace}`)?.thresholds.kvCacheThreshold;
  }

  it("a VA namespace's own wva-saturation-scaling-config wins over the controller namespace's; without it, the controller namespace's applies", async () => {
    await sb.core.createNamespacedConfigMap({ namespace: controllerNs, body: { metadata: { name: WVA_SAT }, data: { default: 'kvCacheThreshold: 0.7\n' } } });
    await createDeployment(sb, 'nl', 1);
    await createVA(sb, 'nl', { model: 'nl-model' });
    expect(await cycleThresholds()).toBe(0.7);

    await upsertConfigMap(sb, WVA_SAT, { default: 'kvCacheThreshold: 0.6\nkvSpareTrigger: 0.05\n' });
    expect(await cycleThresholds()).toBe(0.6);
    const stored = await readStoredConfig({ redis: sb.redis, prefix: sb.prefix });
    expect(Object.keys(stored?.namespaces ?? {})).toEqual([sb.namespace]);

    await sb.core.deleteNamespacedConfigMap({ name: WVA_SAT, namespace: sb.namespace });
    expect(await cycleThresholds()).toBe(0.7);
  });
});
