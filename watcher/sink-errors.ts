/**
 * Whether an error from handing an event on (enqueueing into Redis) looks like the consumer being
 * down or failing over, for every key alike, rather than something about this one key. Redis's
 * own transient replies (READONLY after a failover, LOADING, BUSY, OOM, …), ioredis's connection
 * errors and socket errors are; anything else (BullMQ refusing a job id, a script error, a bug) is
 * taken as the key's own and counts toward dead-lettering it. A misjudged key-specific error only
 * holds the stream as before; a misjudged transient one is also caught by DeliveryBuffer, which
 * holds while no other key gets through.
 */
const REDIS_TRANSIENT_REPLIES = new Set(['READONLY', 'LOADING', 'BUSY', 'OOM', 'MASTERDOWN', 'TRYAGAIN', 'CLUSTERDOWN', 'NOREPLICAS', 'MISCONF', 'MOVED', 'ASK']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);
const CONNECTION_MESSAGES = /Connection is closed|Stream isn't writeable|Reached the max retries per request|Command timed out|socket hang up|connect ETIMEDOUT|ECONNREFUSED|ECONNRESET/;

export function isTransientSinkError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError' || err.name === 'AbortError') return true;
  if (err.name === 'ReplyError') return REDIS_TRANSIENT_REPLIES.has(err.message.split(' ', 1)[0] ?? '');
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && SOCKET_CODES.has(code)) return true;
  return CONNECTION_MESSAGES.test(err.message);
}
