import { Hono } from 'hono';
import { z } from 'zod';
import type { WorkQueue } from '../queue/work-queue.js';
import { OBJECTS_PAGE, OBJECTS_SCRIPT } from './object-page.js';
import { modelServingPage, ObjectPageError, podOperationPage, recentFailures, variantAutoscalingPage, type ObjectSources, type PageQuery } from './object-view.js';
import type { RoleStatusReader } from './role-status.js';

export const OBJECTS_PATH = '/objects';
export const OBJECTS_API_PATH = '/api/objects';

const pageQuery = z.object({
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'namespace must be a DNS-1123 label').optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  // The API server's continue token, handed back as it gave it.
  continue: z.string().max(4096).optional(),
});
const failuresQuery = z.object({ limit: z.coerce.number().int().min(1).max(50).default(20) });

/** What a query's validation refused, as the other read routes say it. */
const problems = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');

// The page runs only its own script and talks only to this server; nothing it shows can run as code
// (it writes text nodes, never HTML), and this policy would refuse it anyway.
const CSP = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The read-only object view: a page at /objects that polls the JSON routes under /api/objects. Open,
 * like the read-only board (no token, GET only, no secrets): every answer is one bounded page.
 */
export function objectRoutes(opts: { sources: ObjectSources; roles: RoleStatusReader; queues: () => WorkQueue[] }): { page: Hono; api: Hono } {
  const api = new Hono();
  const route = (path: string, read: (q: PageQuery) => Promise<unknown>) =>
    api.get(path, async (c) => {
      const q = pageQuery.safeParse(c.req.query());
      if (!q.success) return c.json({ error: problems(q.error) }, 400);
      try {
        return c.json(await read(q.data));
      } catch (err) {
        if (err instanceof ObjectPageError) return c.json({ error: err.message }, err.status);
        throw err;
      }
    });
  route('/modelservings', (q) => modelServingPage(opts.sources, opts.roles, q));
  route('/variantautoscalings', (q) => variantAutoscalingPage(opts.sources, q));
  route('/pods', (q) => podOperationPage(opts.sources, q));
  api.get('/failures', async (c) => {
    const q = failuresQuery.safeParse(c.req.query());
    if (!q.success) return c.json({ error: problems(q.error) }, 400);
    return c.json({ functions: await recentFailures(opts.queues(), q.data.limit) });
  });

  const page = new Hono();
  page.get('/', (c) => c.html(OBJECTS_PAGE, 200, { 'Content-Security-Policy': CSP, 'Cache-Control': 'no-store' }));
  page.get('/app.js', (c) => c.body(OBJECTS_SCRIPT, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'no-store' }));
  return { page, api };
}
