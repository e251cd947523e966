import { Hono } from 'hono';
import { z } from 'zod';
import type { ScheduleResult } from '../queue/work-queue.js';
import type { FunctionHost } from '../runtime/host.js';
import type { Logger } from '../base/log.js';
import { redactUrl } from '../base/redact.js';

/** What the resync routes need of the host. */
export type ResyncHost = Pick<FunctionHost, 'functions' | 'resync' | 'queue'>;

// DNS-1123 subdomain: what namespaces and object names are.
const dnsName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a DNS-1123 name (lowercase letters, digits, - and .)');

/** `namespace/name`, or `name` for a cluster-scoped object. */
export const objectKeySchema = z.string().refine((k) => {
  const parts = k.split('/');
  return parts.length <= 2 && parts.every((p) => dnsName.safeParse(p).success);
}, 'key must be "namespace/name" (or "name" for a cluster-scoped object), each a DNS-1123 name');

const bodySchema = z.object({ key: objectKeySchema.optional() }).strict();

/** How many keys an answer lists per function; the count is always complete. */
export const LISTED_KEYS = 100;

export interface EnqueuedKey {
  key: string;
  /** add: a new job; reschedule: a pending job moved earlier; coalesced: one was already due; deferred: it is running now and will run once more. */
  action: ScheduleResult['action'];
}

export interface FunctionResync {
  function: string;
  enqueued: number;
  keys: EnqueuedKey[];
  truncated: boolean;
}

async function resyncFunction(host: ResyncHost, fn: string): Promise<FunctionResync> {
  const keys: EnqueuedKey[] = [];
  const enqueued = await host.resync(fn, 'manual', (key, result) => {
    if (keys.length < LISTED_KEYS) keys.push({ key, action: result.action });
  });
  return { function: fn, enqueued, keys, truncated: enqueued > keys.length };
}

// Behind the token, and what an operator needs to act on; URLs in it still lose their credentials.
function errorText(err: unknown): string {
  return redactUrl(err instanceof Error ? err.message : String(err));
}

/**
 * Manual resync, the HTTP trigger of the project card: everything, one function, or one object. The
 * routes are mounted behind the token guard by the caller; a key is enqueued through the same keyed
 * queue as a watch event, so a manual resync coalesces with pending work and never overlaps a running
 * reconcile.
 */
export function resyncRoutes(host: ResyncHost, log: Logger): Hono {
  const app = new Hono();
  const known = (fn: string) => host.functions.some((f) => f.name === fn);
  const unknown = (fn: string) => ({ error: `unknown function ${fn}; known: ${host.functions.map((f) => f.name).join(', ') || '(none)'}` });

  const one = async (fn: string, key: string) => {
    const result = await host.queue(fn).add(key, 0, 'manual');
    log.info({ function: fn, key, action: result.action }, 'manual resync of one object');
    return { function: fn, key, action: result.action, jobId: result.jobId || undefined, delayMs: result.delayMs };
  };

  app.post('/', async (c) => {
    try {
      const functions: FunctionResync[] = [];
      for (const f of host.functions) functions.push(await resyncFunction(host, f.name));
      log.info({ functions: functions.map((f) => ({ function: f.function, enqueued: f.enqueued })) }, 'manual resync of everything');
      return c.json({ scope: 'all', enqueued: functions.reduce((n, f) => n + f.enqueued, 0), functions });
    } catch (err) {
      return c.json({ error: `resync failed: ${errorText(err)}` }, 502);
    }
  });

  app.post('/:fn', async (c) => {
    const fn = c.req.param('fn');
    if (!known(fn)) return c.json(unknown(fn), 404);
    const text = await c.req.text();
    let body: z.infer<typeof bodySchema> = {};
    if (text.trim()) {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        return c.json({ error: 'body must be JSON: {} or {"key": "namespace/name"}' }, 400);
      }
      const parsed = bodySchema.safeParse(json);
      if (!parsed.success) return c.json({ error: `invalid body: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}` }, 400);
      body = parsed.data;
    }
    try {
      if (body.key) return c.json({ scope: 'object', ...(await one(fn, body.key)) });
      const r = await resyncFunction(host, fn);
      log.info({ function: fn, enqueued: r.enqueued }, 'manual resync of one function');
      return c.json({ scope: 'function', ...r });
    } catch (err) {
      return c.json({ error: `resync failed: ${errorText(err)}` }, 502);
    }
  });

  app.post('/:fn/:namespace/:name', async (c) => {
    const fn = c.req.param('fn');
    if (!known(fn)) return c.json(unknown(fn), 404);
    const key = `${c.req.param('namespace')}/${c.req.param('name')}`;
    const parsed = objectKeySchema.safeParse(key);
    if (!parsed.success) return c.json({ error: parsed.error.issues[0]?.message ?? 'invalid key' }, 400);
    try {
      return c.json({ scope: 'object', ...(await one(fn, parsed.data)) });
    } catch (err) {
      return c.json({ error: `resync failed: ${errorText(err)}` }, 502);
    }
  });

  return app;
}
