import { z } from 'zod';
import { TRAFFIC_OFF_MODES, type TrafficOffMode } from './protocol/index.js';

/** The lifecycle function's settings, from the environment; a bad value fails at start with what to fix. */
export const opsLifecycleEnvSchema = z.object({
  OPS_LIFECYCLE_RESYNC_MS: z.coerce.number().int().positive().default(60_000),
  OPS_LIFECYCLE_CONCURRENCY: z.coerce.number().int().positive().default(4),
  /** What must be true of traffic before operate is granted (protocol/traffic-off.ts). */
  OPS_LIFECYCLE_TRAFFIC_OFF: z.enum(TRAFFIC_OFF_MODES).default('endpointslices'),
  /**
   * Run the in-tree cooperation controller for Services labelled ops-lifecycle.ripple.dev/cooperate=true
   * (service-cooperator/). Off by default: it costs one LIST of labelled Services per reconcile.
   */
  OPS_LIFECYCLE_SERVICE_COOPERATION: z.enum(['true', 'false']).default('false'),
});

export function trafficOffModeOf(env: Readonly<Record<string, string | undefined>>): TrafficOffMode {
  const parsed = opsLifecycleEnvSchema.shape.OPS_LIFECYCLE_TRAFFIC_OFF.safeParse(env.OPS_LIFECYCLE_TRAFFIC_OFF);
  // definition() already refused a bad value at start; a handler run with another env falls back to the safe default.
  return parsed.success ? parsed.data : 'endpointslices';
}

export function serviceCooperationEnabled(env: Readonly<Record<string, string | undefined>>): boolean {
  return opsLifecycleEnvSchema.shape.OPS_LIFECYCLE_SERVICE_COOPERATION.safeParse(env.OPS_LIFECYCLE_SERVICE_COOPERATION).data === 'true';
}
