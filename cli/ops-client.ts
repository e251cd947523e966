import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { table } from './table.js';

export const CLIENT_COMMANDS = ['status', 'roles', 'resync'] as const;
export const DEFAULT_SERVER = 'http://127.0.0.1:8081';

export const CLIENT_USAGE = `Talking to a running ops server (default ${DEFAULT_SERVER}; --server URL or RIPPLE_OPS_SERVER):
  status                    queues with job counts and workers; this process's watches, Lease and workers
  roles NAMESPACE/NAME      a ModelServing's ServingGroups and roles with their states (the role datastore)
  resync [FUNCTION [KEY]]   enqueue a reconcile of everything, of one function's objects, or of one key
                            (needs the ops token: RIPPLE_OPS_TOKEN or --token-file PATH)
  -o json                   the server's answer as JSON, for scripts`;

/** Raised for what a person must fix; printed as `ripple: <message>` with exit code 1. */
export class ClientError extends Error {}

const countsSchema = z.record(z.string(), z.number());
const statusSchema = z.object({
  mode: z.string().optional(),
  queues: z.array(z.object({ name: z.string(), counts: countsSchema.nullable(), backlog: z.number().nullable(), workers: z.number().nullable() })),
  watches: z.array(z.object({ resource: z.string(), up: z.boolean(), synced: z.boolean(), downSeconds: z.number(), lastError: z.string().optional() })).optional(),
  leader: z.object({ lease: z.string(), isLeader: z.boolean() }).optional(),
  workers: z.object({ functions: z.array(z.string()), running: z.boolean() }).optional(),
});
const roleSchema = z.object({ group: z.string(), roleName: z.string(), roleId: z.string(), state: z.string(), revision: z.string().optional() }).passthrough();
const rolesSchema = z.object({
  entries: z.array(
    z.object({
      key: z.string(),
      value: z.object({
        updatedAt: z.string().optional(),
        groups: z.record(z.string(), z.object({ state: z.string(), revision: z.string().optional() }).passthrough()),
        roles: z.record(z.string(), roleSchema),
      }).passthrough(),
    }),
  ),
});
const resyncSchema = z.union([
  z.object({ scope: z.literal('object'), function: z.string(), key: z.string(), action: z.string() }).passthrough(),
  z.object({ scope: z.literal('function'), function: z.string(), enqueued: z.number(), keys: z.array(z.object({ key: z.string(), action: z.string() })), truncated: z.boolean() }),
  z.object({
    scope: z.literal('all'),
    enqueued: z.number(),
    functions: z.array(z.object({ function: z.string(), enqueued: z.number(), keys: z.array(z.object({ key: z.string(), action: z.string() })), truncated: z.boolean() })),
  }),
]);

const KEY = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$/;

async function call(server: string, path: string, init: RequestInit = {}): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(new URL(path, server.endsWith('/') ? server : `${server}/`), { ...init, signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
    throw new ClientError(`cannot reach the ops server at ${server} (${cause}); start ripple, or pass --server URL`);
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ClientError(`${server} answered ${res.status} without JSON: is it a Ripple ops server?`);
  }
  if (!res.ok) {
    const message = z.object({ error: z.string() }).safeParse(body);
    throw new ClientError(`${res.status} from the ops server: ${message.success ? message.data.error : text.slice(0, 200)}`);
  }
  return body;
}

function parsed<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const r = schema.safeParse(body);
  if (!r.success) throw new ClientError(`unexpected answer to ${what} (is the ops server the same version?): ${r.error.issues[0]?.message ?? ''}`);
  return r.data;
}

function formatStatus(s: z.infer<typeof statusSchema>): string {
  const n = (c: Record<string, number> | null, k: string) => (c ? (c[k] ?? 0) : null);
  const out = [
    table(
      ['queue', 'waiting', 'active', 'delayed', 'failed', 'completed', 'backlog', 'workers'],
      s.queues.map((q) => [q.name, n(q.counts, 'waiting'), n(q.counts, 'active'), n(q.counts, 'delayed'), n(q.counts, 'failed'), n(q.counts, 'completed'), q.backlog, q.workers]),
    ),
  ];
  if (s.watches) {
    out.push('', table(['watch', 'up', 'synced', 'down', 'error'], s.watches.map((w) => [w.resource, w.up ? 'yes' : 'no', w.synced ? 'yes' : 'no', w.downSeconds ? `${w.downSeconds}s` : null, w.lastError])));
  }
  if (s.leader) out.push('', `leader: ${s.leader.isLeader ? 'this process holds' : 'this process does not hold'} Lease ${s.leader.lease}`);
  if (s.workers) out.push(`${s.leader ? '' : '\n'}workers in this process: ${s.workers.functions.join(', ') || '(none)'} (${s.workers.running ? 'running' : 'NOT running'})`);
  if (!s.watches && !s.leader) out.push('', `this ops server (${s.mode ?? 'ops'} mode) runs no watcher: a watcher's /readyz shows its watches and Lease`);
  return out.join('\n');
}

function formatRoles(key: string, r: z.infer<typeof rolesSchema>): string {
  const entry = r.entries[0];
  if (!entry) throw new ClientError(`no role status stored for ${key}`);
  const groups = entry.value.groups;
  const rows: Array<Array<string | null | undefined>> = Object.values(entry.value.roles)
    .sort((a, b) => a.group.localeCompare(b.group) || a.roleName.localeCompare(b.roleName) || a.roleId.localeCompare(b.roleId))
    .map((role) => [role.group, groups[role.group]?.state, role.roleName, role.roleId, role.state, role.revision]);
  // Groups without roles yet still show, so a group stuck before its roles are created is visible.
  for (const [name, g] of Object.entries(groups)) if (!rows.some((row) => row[0] === name)) rows.push([name, g.state, null, null, null, g.revision]);
  rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  return table(['group', 'group state', 'role', 'role id', 'state', 'revision'], rows);
}

function formatResync(r: z.infer<typeof resyncSchema>): string {
  if (r.scope === 'object') return `${r.function} ${r.key}: ${r.action}`;
  const fns = r.scope === 'function' ? [r] : r.functions;
  const rows = fns.flatMap((f) => f.keys.map((k) => [f.function, k.key, k.action]));
  const more = fns.filter((f) => f.truncated).map((f) => `${f.function}: ${f.enqueued} keys, the first ${f.keys.length} listed`);
  return [table(['function', 'key', 'action'], rows), '', `${r.enqueued} keys enqueued`, ...more].join('\n');
}

/** Where the ops token comes from: --token-file, else RIPPLE_OPS_TOKEN; a message says how to give one. */
export function opsToken(tokenFile: string | undefined, env: NodeJS.ProcessEnv): string {
  if (tokenFile) {
    let token: string;
    try {
      token = readFileSync(tokenFile, 'utf8').trim();
    } catch (err) {
      throw new ClientError(`--token-file ${tokenFile}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!token) throw new ClientError(`--token-file ${tokenFile} is empty`);
    return token;
  }
  const token = env.RIPPLE_OPS_TOKEN?.trim();
  if (!token) {
    throw new ClientError('resync changes state and needs the ops token: set RIPPLE_OPS_TOKEN=<token> or pass --token-file PATH (the token the ops server was started with)');
  }
  return token;
}

/** Runs `ripple status|roles|resync …`; returns what to print on stdout. */
export async function runClientCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { server: { type: 'string' }, output: { type: 'string', short: 'o' }, 'token-file': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return CLIENT_USAGE;
  const [command, ...args] = positionals;
  const server = values.server ?? env.RIPPLE_OPS_SERVER ?? DEFAULT_SERVER;
  if (values.output !== undefined && values.output !== 'json') throw new ClientError(`-o ${values.output}: only -o json is supported (without -o: tables)`);
  const json = values.output === 'json';
  const print = (body: unknown) => JSON.stringify(body, null, 2);

  if (command === 'status') {
    if (args.length) throw new ClientError('usage: ripple status [--server URL] [-o json]');
    const body = await call(server, 'api/status');
    return json ? print(body) : formatStatus(parsed(statusSchema, body, 'GET /api/status'));
  }
  if (command === 'roles') {
    const key = args[0];
    if (args.length !== 1 || !key || !/^[^/]+\/[^/]+$/.test(key) || !KEY.test(key)) throw new ClientError('usage: ripple roles NAMESPACE/NAME [--server URL] [-o json]');
    const [ns, name] = key.split('/') as [string, string];
    const body = await call(server, `api/roles/${ns}/${name}`);
    return json ? print(body) : formatRoles(key, parsed(rolesSchema, body, 'GET /api/roles'));
  }
  if (command === 'resync') {
    const [fn, key] = args;
    if (args.length > 2 || (fn !== undefined && !/^[a-z0-9][a-z0-9-]*$/.test(fn)) || (key !== undefined && !KEY.test(key))) {
      throw new ClientError('usage: ripple resync [FUNCTION [NAMESPACE/NAME]] [--server URL] [--token-file PATH] [-o json]');
    }
    const token = opsToken(values['token-file'], env);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const path = fn === undefined ? 'api/resync' : `api/resync/${fn}`;
    const body = await call(server, path, { method: 'POST', headers, body: key ? JSON.stringify({ key }) : '{}' });
    return json ? print(body) : formatResync(parsed(resyncSchema, body, `POST /${path}`));
  }
  throw new ClientError(`unknown command ${command ?? ''}\n${CLIENT_USAGE}`);
}
