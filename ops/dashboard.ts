import { createBullBoard } from '@bull-board/api';
import type { IServerAdapter } from '@bull-board/api/typings/app';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Hono } from 'hono';
import type { WorkQueue } from '../queue/work-queue.js';
import { requireToken } from './auth.js';

export const DASHBOARD_PATH = '/ui';
export const ADMIN_DASHBOARD_PATH = '/admin/ui';

/** What the read-only board shows instead of a failed job's stack (the reason stays visible). */
export const REDACTED_STACK = 'stack hidden in the read-only dashboard: open /admin/ui with the ops token';

/**
 * Replaces every `stacktrace` array in a bull-board answer, wherever it is nested, by the job's
 * `failedReason` and a note: bull-board's Error tab shows the stack instead of the reason when there
 * is one, so the reason has to stand in its place to stay visible.
 */
export function redactStacks(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactStacks);
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'stacktrace' && Array.isArray(v)) {
      const reason = typeof obj.failedReason === 'string' && obj.failedReason ? `${obj.failedReason}\n\n` : '';
      out[k] = v.length ? [`${reason}(${REDACTED_STACK})`] : [];
    } else out[k] = redactStacks(v);
  }
  return out;
}

/** A link in the board's header menu (bull-board's `miscLinks`). */
export interface BoardLink {
  text: string;
  url: string;
}

function board(queues: WorkQueue[], basePath: string, readOnlyMode: boolean, title: string, links: BoardLink[]): Hono {
  const adapter = new HonoAdapter(serveStatic);
  adapter.setBasePath(basePath);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q.bull, { readOnlyMode, allowRetries: !readOnlyMode, description: `Ripple function ${q.name}` })),
    // @bull-board/hono 9.10.1 carries its own @bull-board/api 9.10.1 typings (a private field differs
    // from 9.10.2's); the runtime interface is the same, only the declarations are distinct.
    serverAdapter: adapter as unknown as IServerAdapter,
    // Read-only: no Redis INFO panel (version, memory, clients; its route answers 403) and no
    // per-queue CLIENT LIST (worker names and addresses), which the board would also run on every poll.
    options: { uiConfig: readOnlyMode ? { boardTitle: title, hideRedisDetails: true, showWorkers: false, miscLinks: links } : { boardTitle: title, miscLinks: links } },
  });
  return adapter.registerPlugin();
}

/**
 * Two bull-board instances over the same queues: a read-only one anyone who can reach the ops port
 * may open, and a writable one behind the ops token. Two boards rather than one board with a guard on
 * its write routes, because bull-board's UI shows the retry/clean/remove buttons from each queue's
 * `readOnlyMode`: a read-only board does not offer what it would refuse.
 */
export function mountDashboards(app: Hono, queues: WorkQueue[], token: string | undefined, links: BoardLink[] = []): void {
  // bull-board already answers 405 on write routes of read-only queues; this refuses every other
  // method too, including any route a future bull-board adds without the read-only check.
  app.use(`${DASHBOARD_PATH}/*`, async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      return c.json({ error: `the dashboard at ${DASHBOARD_PATH} is read-only; use ${ADMIN_DASHBOARD_PATH} with the ops token` }, 403);
    }
    await next();
  });
  // A failed job's stack names files, lines and sometimes values: only the admin board shows it. Every
  // JSON answer of the read-only board is rewritten, so a route bull-board adds later is covered too.
  app.use(`${DASHBOARD_PATH}/api/*`, async (c, next) => {
    await next();
    if (!c.res.headers.get('content-type')?.includes('application/json')) return;
    const body: unknown = await c.res.json();
    const headers = new Headers(c.res.headers);
    headers.delete('content-length');
    c.res = new Response(JSON.stringify(redactStacks(body)), { status: c.res.status, headers });
  });
  // bull-board's page sets <base href="/ui/">, so browsers come back to the trailing-slash form.
  app.get(`${DASHBOARD_PATH}/`, (c) => c.redirect(DASHBOARD_PATH));
  app.route(DASHBOARD_PATH, board(queues, DASHBOARD_PATH, true, 'Ripple queues (read-only)', links));
  app.use(`${ADMIN_DASHBOARD_PATH}`, requireToken({ token, basicRealm: 'ripple-ops' }));
  app.use(`${ADMIN_DASHBOARD_PATH}/*`, requireToken({ token, basicRealm: 'ripple-ops' }));
  app.get(`${ADMIN_DASHBOARD_PATH}/`, (c) => c.redirect(ADMIN_DASHBOARD_PATH));
  app.route(ADMIN_DASHBOARD_PATH, board(queues, ADMIN_DASHBOARD_PATH, false, 'Ripple queues', links));
}
