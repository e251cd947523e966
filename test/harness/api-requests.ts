import type { IncomingMessage } from 'node:http';
import https from 'node:https';

export interface ApiRequestCount {
  /** Requests sent since the count began. */
  sent(): number;
  /** Of those, the ones answered, by HTTP status. */
  answered(): Record<number, number>;
  stop(): void;
}

/**
 * Counts this process's API requests with `method` whose path (without the query) and query `matches`, from now
 * until stop(): every request kube/raw.ts and kube/watch-stream.ts send goes through https.request, so wrapping it
 * sees them all (client-node 2.x's typed clients, which only the autoscaler and a CLI check use, send through
 * undici instead).
 * The query tells a watch (`watch=true`) from a list of the same path.
 */
export function countApiRequests(method: string, matches: (path: string, query: URLSearchParams) => boolean): ApiRequestCount {
  let sent = 0;
  const answered: Record<number, number> = {};
  const original = https.request;
  (https as { request: typeof https.request }).request = function counted(this: unknown, ...args: Parameters<typeof https.request>) {
    const req = original.apply(this, args);
    const first: unknown = args[0];
    if (typeof first === 'object' && first !== null && !(first instanceof URL)) {
      const o = first as https.RequestOptions;
      const [path = '', query = ''] = (o.path ?? '').split('?');
      if ((o.method ?? 'GET') === method && matches(path, new URLSearchParams(query))) {
        sent++;
        req.on('response', (res: IncomingMessage) => void (answered[res.statusCode ?? 0] = (answered[res.statusCode ?? 0] ?? 0) + 1));
      }
    }
    return req;
  } as typeof https.request;
  return { sent: () => sent, answered: () => ({ ...answered }), stop: () => void ((https as { request: typeof https.request }).request = original) };
}
