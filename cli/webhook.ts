import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { z } from 'zod';
import { opsLifecycleWebhooks } from '../functions/ops-lifecycle/admission/webhooks.js';
import { TRAFFIC_OFF_MODES } from '../functions/ops-lifecycle/protocol/index.js';
import { loadKubeConfig, type KubeTarget } from '../kube/config.js';
import { instrumentKubeRequests } from '../kube/request-metrics.js';
import { opsApp, startOpsServer } from '../ops/server.js';
import { loadProcessConfig } from '../runtime/config.js';
import { allowUnauthenticatedFromEnv } from '../runtime/http-function.js';
import { createLogger } from '../base/log.js';
import { applyRegistration, deleteRegistration } from '../runtime/webhook/registration.js';
import { serveWebhookFunction } from '../runtime/webhook/function.js';
import { AdmissionMetrics } from '../runtime/webhook/metrics.js';
import { startWebhookServer } from '../runtime/webhook/server.js';
import { packageRoot } from '../runtime/package-root.js';

export const WEBHOOK_USAGE = `Admission webhooks (ops-lifecycle's Pod CREATE gate and same-write transitions), served over HTTPS:
  ripple webhook [--kubeconfig PATH [--context NAME] | --in-cluster] [--port 9443] [--listen 0.0.0.0]
                 [--url https://HOST:PORT] [--san host,ip] [--name ripple-ops-lifecycle]
                 [--create-failure-policy Fail|Ignore] [--traffic-off endpointslices|ready|gate]
                 [--unregister-on-exit] [--grace-delete]
  ripple webhook --function [--port PORT] [--tls-cert-file F --tls-key-file F] [--traffic-off …] [--ops-port PORT]
  Generates a CA and serving certificate (openssl), renews them before they expire, and registers a
  MutatingWebhookConfiguration by URL (--url: how the API server reaches this process; default
  https://127.0.0.1:PORT) with the CA bundle. --traffic-off must match the reconciler's OPS_LIFECYCLE_TRAFFIC_OFF
  (the default is read from it): the webhook never grants operate earlier than the reconciler would.
  --grace-delete (off by default; RIPPLE_WEBHOOK_GRACE_DELETE=true): Pod DELETE through the lifecycle (kuperator's
  GraceDelete); it begins delete operations with this process's credentials (pods get, patch).
  Without a cluster flag it uses the running local sandbox.
  --function: served as a function on a platform (Knative, OpenFaaS; RIPPLE_MODE=webhook, or
  RIPPLE_WEBHOOK_FUNCTION=true): listens on PORT (default 8080) with /_/health and /_/ready, plain HTTP behind
  the platform's TLS, or HTTPS from --tls-cert-file/--tls-key-file (WEBHOOK_TLS_CERT_FILE/_KEY_FILE, e.g. a
  cert-manager Secret, re-read every minute). With --grace-delete it requires RIPPLE_FUNCTION_TOKEN (or _FILE),
  sent by the API server as a Bearer token, or RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true behind a mesh that
  authenticates callers. It generates and registers nothing: the manifests in
  infra/deploy register it (docs/ops-lifecycle.md, "Served as a function"). --ops-port (or RIPPLE_OPS_PORT) also
  serves /metrics (reviews by webhook, operation and result; latency), /healthz and /readyz in plain HTTP on
  that port, as every other Ripple process does (on RIPPLE_OPS_HOST, default the --listen address).`;

const root = packageRoot(import.meta.url);

const flag = (name: string) => z.enum(['true', 'false'], { error: `${name} must be "true" or "false"` }).optional();
const webhookEnvSchema = z.object({
  /** Pod DELETE through the lifecycle, as --grace-delete. */
  RIPPLE_WEBHOOK_GRACE_DELETE: flag('RIPPLE_WEBHOOK_GRACE_DELETE'),
  /** Serve as a function, as --function. */
  RIPPLE_WEBHOOK_FUNCTION: flag('RIPPLE_WEBHOOK_FUNCTION'),
});

/** The webhook's switches from the environment; a value other than true/false is an error that names it. */
export function webhookEnv(env: Readonly<Record<string, string | undefined>>): { graceDelete: boolean; function: boolean } {
  const parsed = webhookEnvSchema.safeParse({ RIPPLE_WEBHOOK_GRACE_DELETE: env.RIPPLE_WEBHOOK_GRACE_DELETE || undefined, RIPPLE_WEBHOOK_FUNCTION: env.RIPPLE_WEBHOOK_FUNCTION || undefined });
  if (!parsed.success) throw new Error(`invalid environment: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  return { graceDelete: parsed.data.RIPPLE_WEBHOOK_GRACE_DELETE === 'true', function: parsed.data.RIPPLE_WEBHOOK_FUNCTION === 'true' };
}

const optionsSchema = z.object({
  port: z.coerce.number().int().min(1).max(65535).default(9443),
  listen: z.string().default('127.0.0.1'),
  url: z.string().url().startsWith('https://', 'the API server only calls webhooks over https').optional(),
  san: z.string().optional(),
  name: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/, 'a DNS-style name').default('ripple-ops-lifecycle'),
  createFailurePolicy: z.enum(['Fail', 'Ignore']).default('Fail'),
  trafficOff: z.enum(TRAFFIC_OFF_MODES).default('endpointslices'),
});

const functionOptionsSchema = z
  .object({
    port: z.coerce.number().int().min(0).max(65535).default(8080),
    listen: z.string().default('0.0.0.0'),
    tlsCertFile: z.string().min(1).optional(),
    tlsKeyFile: z.string().min(1).optional(),
    createFailurePolicy: z.enum(['Fail', 'Ignore']).default('Fail'),
    trafficOff: z.enum(TRAFFIC_OFF_MODES).default('endpointslices'),
    opsPort: z.coerce.number().int().min(0).max(65535).optional(),
    opsHost: z.string().min(1).optional(),
  })
  .refine((o) => (o.tlsCertFile === undefined) === (o.tlsKeyFile === undefined), { message: 'give both --tls-cert-file and --tls-key-file, or neither', path: ['tls-cert-file'] });

/** `ripple webhook --function`: the webhooks as a platform's function; serves until SIGINT/SIGTERM. */
async function runWebhookFunction(values: Record<string, string | boolean | undefined>): Promise<void> {
  const str = (v: string | boolean | undefined) => (typeof v === 'string' ? v : undefined);
  const parsed = functionOptionsSchema.safeParse({
    port: str(values.port) ?? process.env.PORT,
    listen: str(values.listen),
    tlsCertFile: str(values['tls-cert-file']) ?? process.env.WEBHOOK_TLS_CERT_FILE,
    tlsKeyFile: str(values['tls-key-file']) ?? process.env.WEBHOOK_TLS_KEY_FILE,
    createFailurePolicy: str(values['create-failure-policy']),
    trafficOff: str(values['traffic-off']) ?? process.env.OPS_LIFECYCLE_TRAFFIC_OFF,
    opsPort: str(values['ops-port']) ?? (process.env.RIPPLE_OPS_PORT || undefined),
    opsHost: process.env.RIPPLE_OPS_HOST || undefined,
  });
  if (!parsed.success) throw new Error(`webhook --function: ${parsed.error.issues.map((i) => `--${String(i.path[0])}: ${i.message}`).join('; ')}\n${WEBHOOK_USAGE}`);
  const opts = parsed.data;
  const log = createLogger('ripple').child({ mode: 'webhook-function' });
  // Only delete through the lifecycle writes to the cluster: with the function's own ServiceAccount.
  const graceDelete = values['grace-delete'] === true || webhookEnv(process.env).graceDelete;
  const kubeconfig = str(values.kubeconfig) ?? process.env.RIPPLE_KUBECONFIG;
  const target: KubeTarget = kubeconfig ? { kind: 'kubeconfig', path: kubeconfig, context: str(values.context) } : { kind: 'in-cluster' };
  const kc = graceDelete ? loadKubeConfig(target) : undefined;
  // The ops surface of every Ripple process (cli/ripple.ts): /metrics, /healthz, /readyz on a port of its own, so
  // Prometheus scrapes the webhook pods by the same port name as the others and never needs the API server's
  // route (HTTPS, and with GraceDelete behind the token).
  const opsPort = opts.opsPort;
  const registry = opsPort === undefined ? undefined : new Registry();
  if (registry) collectDefaultMetrics({ register: registry });
  // GraceDelete's reads and writes, as the other processes count theirs.
  if (registry && kc) instrumentKubeRequests(kc, registry);
  const fn = await serveWebhookFunction({
    webhooks: opsLifecycleWebhooks({ createFailurePolicy: opts.createFailurePolicy, trafficOff: opts.trafficOff, ...(kc ? { graceDelete: { kc } } : {}) }),
    ...(registry ? { metrics: new AdmissionMetrics(registry) } : {}),
    port: opts.port,
    hostname: opts.listen,
    log,
    // Only GraceDelete needs them (it writes): serveWebhookFunction refuses to serve it without a token or the opt-out.
    token: loadProcessConfig(process.env).RIPPLE_FUNCTION_TOKEN,
    allowUnauthenticated: allowUnauthenticatedFromEnv(process.env),
    ...(opts.tlsCertFile && opts.tlsKeyFile ? { tls: { certFile: opts.tlsCertFile, keyFile: opts.tlsKeyFile } } : {}),
  });
  // Once the webhooks serve: the function answers reviews as soon as it listens, so it is as live and ready as that.
  const ops = registry && opsPort !== undefined ? await startOpsServer({ app: opsApp({ registry, log, live: () => [], ready: () => Promise.resolve([]) }), port: opsPort, host: opts.opsHost ?? opts.listen }) : undefined;
  if (ops) log.info({ port: ops.port }, 'ops server (metrics, health) listening');
  // Lets a parent process (tests, supervisors) know start-up is over, with the ports it got (as cli/ripple.ts does).
  process.send?.({ ready: true, opsPort: ops?.port, port: fn.port });
  const stop = async (signal: string) => {
    log.info({ signal }, 'stopping the webhook function');
    await fn.close();
    await ops?.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

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
      'grace-delete': { type: 'boolean' },
      function: { type: 'boolean' },
      'tls-cert-file': { type: 'string' },
      'tls-key-file': { type: 'string' },
      'ops-port': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(WEBHOOK_USAGE);
    return;
  }
  if (values.function || webhookEnv(process.env).function) return runWebhookFunction(values);
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
  const graceDelete = values['grace-delete'] === true || webhookEnv(process.env).graceDelete;
  const webhooks = opsLifecycleWebhooks({ createFailurePolicy: opts.createFailurePolicy, trafficOff: opts.trafficOff, ...(graceDelete ? { graceDelete: { kc } } : {}) });
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
