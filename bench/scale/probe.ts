// Loaded into each Ripple process bench/scale.ts starts (`node --import tsx --import bench/scale/probe.ts`):
// counts the process's API requests by kind on its HTTPS client (kube/raw.ts and kube/watch-stream.ts call
// https.request for every request; client-node 2.x's typed clients send through undici and are not seen, but
// only the autoscaler and a CLI check use them, neither run by this bench), keeps the start time of each
// reconcile the bench's wrapped definitions report (definitions.ts), and answers the bench over the IPC
// channel it was spawned with. It changes nothing Ripple does.
import https from 'node:https';
import { z } from 'zod';

export const REQUEST_KINDS = ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete', 'event'] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];
export type RequestCounts = Record<RequestKind, number>;

export const probeReplySchema = z.object({
  requests: z.record(z.enum(REQUEST_KINDS), z.number()),
  /** [ms since the epoch (cross-process comparable), key] of every reconcile started since the last reply. */
  reconciles: z.array(z.tuple([z.number(), z.string()])),
});
export type ProbeReply = z.infer<typeof probeReplySchema>;

const requests: RequestCounts = { get: 0, list: 0, watch: 0, create: 0, patch: 0, update: 0, delete: 0, event: 0 };
let reconciles: Array<[number, string]> = [];

/** What kind of API request a method and path are: Events apart, as emit-events writes them. */
export function requestKind(method: string, pathAndQuery: string): RequestKind {
  const [p = '', query = ''] = pathAndQuery.split('?');
  if (/\/events(\/|$)/.test(p)) return 'event';
  const byMethod: Record<string, RequestKind> = { POST: 'create', PATCH: 'patch', PUT: 'update', DELETE: 'delete' };
  const kind = byMethod[method.toUpperCase()];
  if (kind) return kind;
  if (new URLSearchParams(query).get('watch') === 'true' || new URLSearchParams(query).get('watch') === '1') return 'watch';
  // /api/v1/[namespaces/ns/]plural[/name] and /apis/group/version/[namespaces/ns/]plural[/name]:
  // after the group-version prefix, an odd number of segments names a collection.
  const segments = p.split('/').filter(Boolean);
  const rest = segments.slice(segments[0] === 'api' ? 2 : 3);
  return rest.length % 2 === 1 ? 'list' : 'get';
}

/** Called by the wrapped reconcile (definitions.ts) as it starts. */
export function recordReconcile(key: string): void {
  reconciles.push([performance.timeOrigin + performance.now(), key]);
}

const original = https.request;
(https as { request: typeof https.request }).request = function counted(this: unknown, ...args: Parameters<typeof https.request>) {
  const first: unknown = args[0];
  if (typeof first === 'object' && first !== null && !(first instanceof URL)) {
    const opts = first as https.RequestOptions;
    requests[requestKind(opts.method ?? 'GET', opts.path ?? '')]++;
  }
  return original.apply(this, args);
} as typeof https.request;

if (process.send) {
  process.on('message', (msg: unknown) => {
    if (msg !== 'sample') return;
    const reply: ProbeReply = { requests: { ...requests }, reconciles };
    reconciles = [];
    process.send?.(reply);
  });
  // The channel must not keep the process alive when Ripple shuts down on SIGTERM.
  process.channel?.unref();
}
