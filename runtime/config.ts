import { z } from 'zod';

/** Process-level settings from the environment, parsed once at start with messages that say what to fix. */
export const processConfigSchema = z.object({
  REDIS_URL: z.string().url().optional(),
  RIPPLE_PREFIX: z.string().regex(/^[a-z0-9-]+$/, 'use lowercase letters, digits and dashes').default('ripple'),
  RIPPLE_OPS_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
  RIPPLE_OPS_HOST: z.string().default('127.0.0.1'),
  /** Namespace of the leader-election Lease and of the controller's own objects. */
  RIPPLE_NAMESPACE: z.string().default('ripple-system'),
  /** Reconcile only this namespace (like controller-runtime's cache namespace); unset: all namespaces. */
  RIPPLE_WATCH_NAMESPACE: z.string().optional(),
  /** /readyz turns unready when a watch has been down longer than this. */
  RIPPLE_WATCH_DOWN_BOUND_MS: z.coerce.number().int().positive().default(60_000),
  RIPPLE_OPS_TOKEN: z.string().min(16, 'RIPPLE_OPS_TOKEN must be at least 16 characters').optional(),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'),
});
export type ProcessConfig = z.infer<typeof processConfigSchema>;

export function loadProcessConfig(env: NodeJS.ProcessEnv = process.env): ProcessConfig {
  const parsed = processConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid environment: ${problems}`);
  }
  return parsed.data;
}
