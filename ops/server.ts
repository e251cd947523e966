import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import type { Registry } from 'prom-client';

export interface OpsServerOptions {
  port: number;
  host: string;
  registry: Registry;
  /** Liveness: the process is not wedged. */
  healthy: () => boolean;
  /** Readiness: Redis answers and no watch has been down past its bound; returns what is wrong. */
  ready: () => Promise<string[]>;
}

/** The ops endpoints every Ripple process serves: health, readiness and Prometheus metrics. */
export function opsApp(opts: Omit<OpsServerOptions, 'port' | 'host'>): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => (opts.healthy() ? c.text('ok') : c.text('unhealthy', 500)));
  app.get('/readyz', async (c) => {
    const problems = await opts.ready();
    return problems.length === 0 ? c.text('ok') : c.json({ ready: false, problems }, 503);
  });
  app.get('/metrics', async (c) => c.body(await opts.registry.metrics(), 200, { 'Content-Type': opts.registry.contentType }));
  return app;
}

export function startOpsServer(opts: OpsServerOptions & { app?: Hono }): Promise<{ server: ServerType; port: number }> {
  const app = opts.app ?? opsApp(opts);
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: opts.port, hostname: opts.host }, (info) => resolve({ server, port: info.port }));
  });
}
