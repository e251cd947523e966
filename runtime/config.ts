import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseRedisUrl } from '../queue/connection.js';

const token = (name: string) => z.string().min(16, `${name} must be at least 16 characters`).optional();

/** Process-level settings from the environment, parsed once at start with messages that say what to fix. */
export const processConfigSchema = z.object({
  /** redis://, rediss://, redis+sentinel://h:p,h:p/<master> or redis+cluster://h:p,h:p (queue/connection.ts). */
  REDIS_URL: z
    .string()
    .superRefine((url, ctx) => {
      try {
        parseRedisUrl(url);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
      }
    })
    .optional(),
  // No braces: Ripple adds a Redis Cluster hash tag per function itself (queue/keys.ts queuePrefix).
  RIPPLE_PREFIX: z.string().regex(/^[a-z0-9-]+$/, 'use lowercase letters, digits and dashes').default('ripple'),
  RIPPLE_OPS_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
  RIPPLE_OPS_HOST: z.string().default('127.0.0.1'),
  /** Namespace of the leader-election Lease and of the controller's own objects. */
  RIPPLE_NAMESPACE: z.string().default('ripple-system'),
  /** Reconcile only this namespace (like controller-runtime's cache namespace); unset: all namespaces. */
  RIPPLE_WATCH_NAMESPACE: z.string().optional(),
  /** /readyz turns unready when a watch has been down longer than this. */
  RIPPLE_WATCH_DOWN_BOUND_MS: z.coerce.number().int().positive().default(60_000),
  /**
   * /healthz (liveness) fails when a watch has been down longer than this. Much longer than the
   * readiness bound: the loop reconnects by itself, and a restart only helps a process that is wedged.
   */
  RIPPLE_WATCH_STALL_BOUND_MS: z.coerce.number().int().positive().default(600_000),
  /** Bearer token for the ops server's state-changing routes; unset disables them. */
  RIPPLE_OPS_TOKEN: token('RIPPLE_OPS_TOKEN'),
  /** `ripple serve`: the HTTP port (Knative sets PORT; OpenFaaS expects 8080). */
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** `ripple serve`: the address to bind; all interfaces, since a platform's proxy calls it. */
  RIPPLE_SERVE_HOST: z.string().default('0.0.0.0'),
  /** Shared by the dispatcher and `ripple serve`: when set, reconcile requests must carry it as a Bearer token. */
  RIPPLE_FUNCTION_TOKEN: token('RIPPLE_FUNCTION_TOKEN'),
  /** `ripple serve`: concurrent reconciles before answering 429 (of-watchdog's max_inflight); 0 = no limit. */
  RIPPLE_MAX_INFLIGHT: z.coerce.number().int().min(0).default(0),
  /** Dispatcher: how long one HTTP reconcile may take (Knative's default request timeout is 300 s). */
  RIPPLE_DISPATCH_TIMEOUT_MS: z.coerce.number().int().positive().default(300_000),
  /**
   * Defaults for the CLI's mode, `--function` and `--in-cluster`, for platforms that cannot pass
   * arguments (an OpenFaaS stack sets environment only). Flags win over these.
   */
  RIPPLE_MODE: z.enum(['all', 'watcher', 'worker', 'ops', 'serve', 'webhook']).optional(),
  RIPPLE_FUNCTION: z.string().optional(),
  RIPPLE_IN_CLUSTER: z.enum(['true', 'false']).optional(),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'),
});
export type ProcessConfig = z.infer<typeof processConfigSchema>;

// Secrets may come as files (OpenFaaS mounts secrets under /var/openfaas/secrets; Kubernetes can too),
// so `NAME_FILE` is read when `NAME` itself is unset.
const FILE_VARIANTS = ['REDIS_URL', 'RIPPLE_OPS_TOKEN', 'RIPPLE_FUNCTION_TOKEN'] as const;

export function loadProcessConfig(env: NodeJS.ProcessEnv = process.env): ProcessConfig {
  const resolved: NodeJS.ProcessEnv = { ...env };
  for (const name of FILE_VARIANTS) {
    const file = env[`${name}_FILE`];
    if (resolved[name] === undefined && file) {
      try {
        resolved[name] = readFileSync(file, 'utf8').trim();
      } catch (err) {
        throw new Error(`invalid environment: ${name}_FILE: cannot read ${file} (${err instanceof Error ? err.message : String(err)})`, { cause: err });
      }
    }
  }
  // An empty variable (a Secret key present but blank) means unset, not "a token of length 0".
  for (const name of FILE_VARIANTS) if (resolved[name] === '') delete resolved[name];
  const parsed = processConfigSchema.safeParse(resolved);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid environment: ${problems}`);
  }
  return parsed.data;
}
