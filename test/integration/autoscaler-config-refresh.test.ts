import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStoredConfig } from '../../functions/reconcile-autoscaler/config-store.js';
import { definition } from '../../functions/reconcile-autoscaler/definition.js';
import { CONFIG_KEY, OPTIMIZE_KEY } from '../../functions/reconcile-autoscaler/keys.js';
import { parseObjectKey } from '../../queue/keys.js';
import { eventRequestsKey } from '../../runtime/event-sink.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';
import { autoscalerEnv, upsertConfigMap } from './autoscaler-helpers.js';

const SAT = 'saturation-scaling-config';
const CTRL = 'workload-variant-autoscaler-variantautoscaling-config';

// Issue 14 scenario 9: `@config` and `@optimize` are different keys, so two workers can run them at
// once, and both re-parse a ConfigMap that moved. The refresh is serialised: one parse, one store,
// one Warning per bad entry (not one per key that happened to run).
describe('reconcile-autoscaler: @config and @optimize do not refresh the configuration at once (issue 14 scenario 9)', () => {
  let sb: TestSandbox;
  let host: FunctionHost;
  const log = createLogger('autoscaler-config-refresh', process.env.LOG_LEVEL ?? 'warn');
  const env = () => ({ ...process.env, ...autoscalerEnv(sb) });

  beforeAll(async () => {
    sb = await openSandbox('as-cfg');
    host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix: sb.prefix, functions: [definition(env())], log, env: env() });
  });
  afterAll(async () => {
    await host?.close();
    await sb?.cleanup();
  });

  it('both keys at once on a ConfigMap with a bad entry: one Warning for it, and the stored configuration has both good values', async () => {
    await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '1h' });
    await upsertConfigMap(sb, SAT, { default: 'kvCacheThreshold: 0.75\nqueueLengthThreshold: 5\n', broken: 'model_id: x\nnamespace: y\nkvCacheThreshold: 7\n' });
    const def = definition(env());
    const run = (key: string) => def.reconcile({ key, reason: 'test', ...parseObjectKey(key) }, host.context(log));
    await Promise.all([run(CONFIG_KEY), run(OPTIMIZE_KEY), run(CONFIG_KEY)]);

    const warnings = (await sb.redis.lrange(eventRequestsKey(sb.prefix, `${sb.namespace}/ConfigMap/${SAT}`), 0, -1)).map((t) => JSON.parse(t) as { reason: string; message: string });
    expect(warnings.map((w) => w.reason)).toEqual(['InvalidConfiguration']);
    expect(warnings[0]?.message).toContain('saturation-scaling-config[broken]');
    const stored = await readStoredConfig({ redis: sb.redis, prefix: sb.prefix });
    expect(stored?.saturation.default.kvCacheThreshold).toBe(0.75);
    expect(stored?.controller.globalOptIntervalMs).toBe(3_600_000);
  });
});
