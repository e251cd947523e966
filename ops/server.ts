import { randomUUID } from 'node:crypto';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { WorkQueue } from '../queue/work-queue.js';
import { createLogger, type Logger } from '../base/log.js';
import { redactUrl } from '../base/redact.js';
import { requireToken } from './auth.js';
import { ADMIN_DASHBOARD_PATH, DASHBOARD_PATH, mountDashboards } from './dashboard.js';
import { backlogOf, jobCounts, registerJobCounts } from './queue-counts.js';
import { resyncRoutes, type ResyncHost } from './resync.js';
import { BadContinueToken } from './scan-page.js';
import { OBJECTS_API_PATH, OBJECTS_PATH, objectRoutes } from './object-routes.js';
import type { ObjectSources } from './object-view.js';
import { opsStatus, type ProcessStatus } from './status.js';
import type { RoleStatusReader } from './role-status.js';

/** What the full ops surface needs of the function host. */
export type OpsHost = ResyncHost & { allQueues(): WorkQueue[] };

export interface OpsControl {
  host: OpsHost;
  /** RIPPLE_OPS_TOKEN; undefined disables every state-changing route. */
  token: string | undefined;
  roles: RoleStatusReader;
  log: Logger;
  /** This process's watches, Lease and workers for `GET /api/status` (`ripple status`). */
  process?: ProcessStatus;
  /** The functions' readers behind the object view (/objects); without them the view is not served. */
  objects?: ObjectSources;
}

export interface OpsAppOptions {
  registry: Registry;
  /** Liveness problems (empty: alive). */
  live: () => string[] | Promise<string[]>;
  /** Readiness problems (empty: ready). */
  ready: () => Promise<string[]>;
  /**
   * The control surface: dashboards, manual resync, job counts, the role datastore. Only the ops
   * server (and all-in-one) has it; watcher and worker processes serve health and metrics only, so
   * the job counts are exported once and the writable routes exist in one place.
   */
  control?: OpsControl;
  /** Where failed requests are logged; default the control's logger, else a logger of its own. */
  log?: Logger;
}

const rolesQuery = z.object({
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'namespace must be a DNS-1123 label').optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
  continue: z.string().max(512).optional(),
});

export function opsApp(opts: OpsAppOptions): Hono {
  const app = new Hono();
  const log = opts.log ?? opts.control?.log ?? createLogger('ripple-ops');
  // Most of these routes answer without authentication: a 500 names the request id under which the
  // cause was logged, never the cause (an error's text can carry a URL, a key, a credential).
  app.onError((err, c) => {
    if (err instanceof HTTPException) return err.getResponse();
    const requestId = randomUUID();
    log.error({ err: redactUrl(err.message), path: c.req.path, requestId }, 'ops route failed');
    return c.json({ error: `internal error; the ops server logged the cause with requestId ${requestId}`, requestId }, 500);
  });

  app.get('/healthz', async (c) => {
    const problems = await opts.live();
    return problems.length === 0 ? c.text('ok') : c.json({ live: false, problems }, 500);
  });
  app.get('/readyz', async (c) => {
    const problems = await opts.ready();
    return problems.length === 0 ? c.text('ok') : c.json({ ready: false, problems }, 503);
  });
  app.get('/metrics', async (c) => c.body(await opts.registry.metrics(), 200, { 'Content-Type': opts.registry.contentType }));

  const control = opts.control;
  if (!control) return app;
  const queues = control.host.allQueues();
  registerJobCounts(opts.registry, () => control.host.allQueues());

  app.get('/', (c) =>
    c.json({
      service: 'ripple-ops',
      endpoints: {
        health: ['/healthz', '/readyz'],
        metrics: '/metrics',
        queues: '/api/queues',
        status: '/api/status',
        roles: ['/api/roles', '/api/roles/:namespace/:name'],
        dashboard: DASHBOARD_PATH,
        ...(control.objects ? { objects: [OBJECTS_PATH, `${OBJECTS_API_PATH}/{modelservings,variantautoscalings,pods,failures}`] } : {}),
        adminDashboard: `${ADMIN_DASHBOARD_PATH} (token)`,
        resync: ['POST /api/resync', 'POST /api/resync/:function', 'POST /api/resync/:function/:namespace/:name'],
      },
      writable: control.token !== undefined,
    }),
  );

  // Also what KEDA's metrics-api scaler can read without a Prometheus in between.
  app.get('/api/queues', async (c) => {
    const all = control.host.allQueues();
    const counts = await Promise.all(all.map((q) => jobCounts(q)));
    return c.json({
      queues: all.map((q, i) => {
        const s = counts[i]!;
        return { name: q.name, counts: s, backlog: backlogOf(s) };
      }),
    });
  });

  app.get('/api/status', async (c) => c.json(await opsStatus(control.host.allQueues(), control.process ?? {})));

  app.get('/api/roles', async (c) => {
    const q = rolesQuery.safeParse(c.req.query());
    if (!q.success) return c.json({ error: q.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') }, 400);
    try {
      const page = await control.roles.list(q.data);
      // `truncated` for clients of the unpaginated answer; `continue` fetches the next page.
      return c.json({ ...page, truncated: page.continue !== undefined });
    } catch (err) {
      if (err instanceof BadContinueToken) return c.json({ error: err.message }, 400);
      throw err;
    }
  });
  app.get('/api/roles/:namespace/:name', async (c) => {
    const entries = await control.roles.get(c.req.param('namespace'), c.req.param('name'));
    return entries.length === 0 ? c.json({ error: 'no role status stored for this object', entries }, 404) : c.json({ entries });
  });

  app.use('/api/resync', requireToken({ token: control.token }));
  app.use('/api/resync/*', requireToken({ token: control.token }));
  app.route('/api/resync', resyncRoutes(control.host, control.log));

  mountDashboards(app, queues, control.token, control.objects ? [{ text: 'Objects', url: OBJECTS_PATH }] : []);
  if (control.objects) {
    const objects = objectRoutes({ sources: control.objects, roles: control.roles, queues: () => control.host.allQueues() });
    app.route(OBJECTS_API_PATH, objects.api);
    app.route(OBJECTS_PATH, objects.page);
  }
  return app;
}

export interface RunningOpsServer {
  server: ServerType;
  port: number;
  close(): Promise<void>;
}

export function startOpsServer(opts: { app: Hono; port: number; host: string }): Promise<RunningOpsServer> {
  return new Promise((resolve) => {
    const server = serve({ fetch: opts.app.fetch, port: opts.port, hostname: opts.host }, (info) =>
      resolve({
        server,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Keep-alive connections (Prometheus, the kubelet) would hold close() open until they time out.
            if ('closeIdleConnections' in server) server.closeIdleConnections();
          }),
      }),
    );
  });
}
