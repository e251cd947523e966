import type { RedisClient } from '../queue/connection.js';
import { redactUrl } from '../base/redact.js';
import type { WatchHealth } from '../watcher/list-watch.js';

/** What a process has that health depends on; each part is optional (a worker has no watcher). */
export interface HealthSources {
  redis?: Pick<RedisClient, 'ping'>;
  watcher?: { health(): WatchHealth[] };
  /** False once a started worker stopped running (closed or crashed). */
  workersRunning?: () => boolean;
  /** Readiness: a watch down (or never synced) longer than this makes the process unready. */
  watchDownBoundMs: number;
  /** Liveness: a watch down longer than this means the process should be restarted. */
  watchStallBoundMs: number;
  /** How long a Redis PING may take before Redis counts as down. */
  redisTimeoutMs?: number;
  now?: () => number;
}

// ioredis queues commands while disconnected (workers need that), so a bare PING would hang for as
// long as Redis is down; the probe must answer within the kubelet's timeout instead.
export async function redisProblem(redis: Pick<RedisClient, 'ping'>, timeoutMs: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to PING within ${timeoutMs} ms`)), timeoutMs);
    });
    await Promise.race([redis.ping(), timeout]);
    return undefined;
  } catch (err) {
    // /readyz answers anyone: an error naming the Redis URL must not show its password.
    return redactUrl(`redis: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(timer);
  }
}

function watchProblems(health: WatchHealth[], boundMs: number, now: number, requireSync: boolean): string[] {
  const out: string[] = [];
  for (const h of health) {
    const downFor = h.downSince === undefined ? 0 : now - h.downSince;
    if (requireSync && !h.synced) out.push(redactUrl(`watch ${h.resource}: not synced yet${h.lastError ? ` (${h.lastError})` : ''}`));
    else if (downFor >= boundMs) out.push(redactUrl(`watch ${h.resource}: down for ${Math.round(downFor / 1000)} s (${h.lastError ?? 'no error recorded'})`));
  }
  return out;
}

/** Readiness: RedisClient answers, every watch has synced and none has been down past its bound, workers run. */
export async function readinessProblems(s: HealthSources): Promise<string[]> {
  const now = (s.now ?? Date.now)();
  const problems: string[] = [];
  if (s.redis) {
    const p = await redisProblem(s.redis, s.redisTimeoutMs ?? 2000);
    if (p) problems.push(p);
  }
  if (s.watcher) problems.push(...watchProblems(s.watcher.health(), s.watchDownBoundMs, now, true));
  if (s.workersRunning && !s.workersRunning()) problems.push('workers: a worker is not running');
  return problems;
}

/**
 * Liveness: only what a restart can fix. Redis being down is not (every replica would restart in a
 * loop); a watch that has been down far longer than its reconnect backoff may be a wedged process.
 */
export function livenessProblems(s: HealthSources): string[] {
  const now = (s.now ?? Date.now)();
  return s.watcher ? watchProblems(s.watcher.health(), s.watchStallBoundMs, now, false) : [];
}
