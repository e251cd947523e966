import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { opsLifecycleWebhooks } from '../functions/ops-lifecycle/admission/webhooks.js';
import { TRAFFIC_OFF_MODES } from '../functions/ops-lifecycle/protocol/index.js';
import { loadKubeConfig, type KubeTarget } from '../kube/config.js';
import { createLogger } from '../runtime/log.js';
import { applyRegistration, deleteRegistration } from '../runtime/webhook/registration.js';
import { startWebhookServer } from '../runtime/webhook/server.js';

export const WEBHOOK_USAGE = `Admission webhooks (ops-lifecycle's Pod CREATE gate and same-write transitions), served over HTTPS:
  ripple webhook [--kubeconfig PATH [--context NAME] | --in-cluster] [--port 9443] [--listen 0.0.0.0]
                 [--url https://HOST:PORT] [--san host,ip] [--name ripple-ops-lifecycle]
                 [--create-failure-policy Fail|Ignore] [--traffic-off endpointslices|ready|gate]
                 [--unregister-on-exit]
  Generates a CA and serving certificate (openssl), renews them before they expire, and registers a
  MutatingWebhookConfiguration by URL (--url: how the API server reaches this process; default
  https://127.0.0.1:PORT) with the CA bundle. --traffic-off must match the reconciler's OPS_LIFECYCLE_TRAFFIC_OFF
  (the default is read from it): the webhook never grants operate earlier than the reconciler would.
  Without a cluster flag it uses the running local sandbox.`;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const optionsSchema = z.object({
  port: z.coerce.number().int().min(1).max(65535).default(9443),
  listen: z.string().default('127.0.0.1'),
  url: z.string().url().startsWith('https://', 'the API server only calls webhooks over https').optional(),
  san: z.string().optional(),
  name: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/, 'a DNS-style name').default('ripple-ops-lifecycle'),
  createFailurePolicy: z.enum(['Fail', 'Ignore']).default('Fail'),
  trafficOff: z.enum(TRAFFIC_OFF_MODES).default('endpointslices'),
});

/** `ripple webhook …`: serves until SIGINT/SIGTERM. */
export async function runWebhookCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'in-cluster': { type: 'boolean' },
      port: { type: 'string' },
      listen: { type: 'string' },
      url: { type: 'string' },
      san: { type: 'string' },
      name: { type: 'string' },
      'create-failure-policy': { type: 'string' },
      'traffic-off': { type: 'string' },
      'unregister-on-exit': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(WEBHOOK_USAGE);
    return;
  }
  const parsed = optionsSchema.safeParse({
    port: values.port,
    listen: values.listen,
    url: values.url,
    san: values.san,
    name: values.name,
    createFailurePolicy: values['create-failure-policy'],
    trafficOff: values['traffic-off'] ?? process.env.OPS_LIFECYCLE_TRAFFIC_OFF,
  });
  if (!parsed.success) throw new Error(`webhook: ${parsed.error.issues.map((i) => `--${String(i.path[0])}: ${i.message}`).join('; ')}\n${WEBHOOK_USAGE}`);
  const opts = parsed.data;

  const sandboxConfig = path.join(process.env.RIPPLE_SANDBOX_DIR ?? path.join(root, '.sandbox'), 'kubeconfig');
  const kubeconfig = values.kubeconfig ?? process.env.RIPPLE_KUBECONFIG;
  let target: KubeTarget;
  if (values['in-cluster']) target = { kind: 'in-cluster' };
  else if (kubeconfig) target = { kind: 'kubeconfig', path: kubeconfig, context: values.context };
  else if (existsSync(sandboxConfig)) target = { kind: 'kubeconfig', path: sandboxConfig };
  else throw new Error('webhook: no cluster: pass --kubeconfig or --in-cluster, or start the sandbox (infra/local-control-plane/up.sh)');
  const kc = loadKubeConfig(target);

  const log = createLogger('ripple').child({ mode: 'webhook' });
  const baseUrl = (opts.url ?? `https://127.0.0.1:${opts.port}`).replace(/\/$/, '');
  const hosts = [new URL(baseUrl).hostname.replace(/^\[|\]$/g, ''), ...(opts.san?.split(',').filter(Boolean) ?? [])];
  const webhooks = opsLifecycleWebhooks({ createFailurePolicy: opts.createFailurePolicy, trafficOff: opts.trafficOff });
  const server = await startWebhookServer({
    webhooks,
    hosts,
    port: opts.port,
    hostname: opts.listen,
    log,
    onCaBundle: async (caBundlePem) => {
      await applyRegistration(kc, { name: opts.name, baseUrl, caBundlePem, webhooks });
      log.info({ registration: opts.name, url: baseUrl }, 'webhook registered');
    },
  });

  const stop = async (signal: string) => {
    log.info({ signal }, 'stopping the webhook server');
    // Kept by default: with failurePolicy Fail the API server must refuse controlled Pods while no replica
    // serves, rather than create them without the gate.
    if (values['unregister-on-exit']) await deleteRegistration(kc, opts.name).catch(() => undefined);
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}
