import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { WorkQueue } from '../../queue/work-queue.js';
import { startCli, stopCli, type RunningCli } from '../fixtures/http-cli.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The `ripple` command itself, as a Deployment runs it: modes, flags, graceful SIGTERM, the token.
let sb: TestSandbox;
const clis: RunningCli[] = [];
const queues: Array<{ q: WorkQueue; c: Redis }> = [];
const TOKEN = 'cli-ops-token-0123456789abcdef';

let kubeconfigPath = '';
function common(): string[] {
  return ['--definitions', 'test/fixtures/http-functions.ts', '--kubeconfig', kubeconfigPath, '--redis-url', sb.redisUrl];
}

function queue(prefix: string, name: string): WorkQueue {
  const c = new Redis(sb.redisUrl, { maxRetriesPerRequest: null });
  const q = new WorkQueue({ name, connection: c, prefix });
  queues.push({ q, c });
  return q;
}

const list = (key: string) => sb.redis.lrange(key, 0, -1);

beforeAll(async () => {
  sb = await openSandbox('cli');
  kubeconfigPath = inject('kubeconfig');
});
afterEach(async () => {
  for (const c of clis.splice(0)) await stopCli(c, 'SIGKILL');
  for (const { q, c } of queues.splice(0)) {
    await q.close();
    c.disconnect();
  }
});
afterAll(async () => {
  await sb.cleanup();
});

describe('ripple CLI', () => {
  it('worker: SIGTERM finishes the in-flight reconciles, takes no new ones, exits 0', async () => {
    const prefix = `${sb.prefix}-w`;
    const cli = await startCli(['worker', '--functions', 'slow', '--ops-port', '0', ...common()], { RIPPLE_PREFIX: prefix, SLOW_MS: '2500' });
    clis.push(cli);
    const q = queue(prefix, 'slow');
    await q.add('ns/a');
    await q.add('ns/b');
    await waitFor('both reconciles to start', 15_000, async () => (await list(`${prefix}:slow:started`)).length === 2);

    cli.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    await q.add('ns/after'); // arrives while stopping: left for another replica
    expect(await cli.exited).toBe(0);

    expect((await list(`${prefix}:slow:finished`)).sort()).toEqual(['ns/a', 'ns/b']);
    expect(await list(`${prefix}:slow:started`)).not.toContain('ns/after');
    expect(await sb.redis.hlen(q.keys.active)).toBe(0);
    expect(await q.bull.getCompletedCount()).toBe(2);
    expect(await q.bull.getFailedCount()).toBe(0);
    expect(await sb.redis.zscore(q.keys.due, 'ns/after')).not.toBeNull(); // still pending, not lost
  });

  it('serve + worker --dispatch: SIGTERM on both while a call is in flight — the call completes and nothing fails', async () => {
    const prefix = `${sb.prefix}-d`;
    const env = { RIPPLE_PREFIX: prefix, SLOW_MS: '2500', PORT: '0', RIPPLE_SERVE_HOST: '127.0.0.1', RIPPLE_FUNCTION_TOKEN: 'fn-token-0123456789abcdef' };
    const fn = await startCli(['serve', '--function', 'slow', ...common()], env);
    clis.push(fn);
    const dispatcher = await startCli(['worker', '--dispatch', `slow=http://127.0.0.1:${fn.port}`, '--ops-port', '0', ...common()], env);
    clis.push(dispatcher);
    const q = queue(prefix, 'slow');
    await q.add('ns/in-flight');
    await waitFor('the dispatched reconcile to start', 15_000, async () => (await list(`${prefix}:slow:started`)).includes('ns/in-flight'));

    // A rollout signals both; each drains: the function finishes the request, the dispatcher waits for the answer.
    dispatcher.child.kill('SIGTERM');
    fn.child.kill('SIGTERM');
    expect(await dispatcher.exited).toBe(0);
    expect(await fn.exited).toBe(0);
    expect(await list(`${prefix}:slow:finished`)).toEqual(['ns/in-flight']);
    expect(await q.bull.getCompletedCount()).toBe(1);
    expect(await sb.redis.hget(q.keys.failures, 'ns/in-flight')).toBeNull();
  });

  it('all: a watch event is reconciled, manual resync needs the token, and the token is never logged', async () => {
    const prefix = `${sb.prefix}-all`;
    const cli = await startCli(
      ['all', '--ops-port', '0', ...common()],
      { RIPPLE_PREFIX: prefix, RIPPLE_OPS_TOKEN: TOKEN, RIPPLE_NAMESPACE: sb.namespace, RIPPLE_WATCH_NAMESPACE: sb.namespace, LOG_LEVEL: 'debug' },
      { capture: true },
    );
    clis.push(cli);
    const ops = `http://127.0.0.1:${cli.opsPort}`;
    await waitFor('ready', 30_000, async () => (await fetch(`${ops}/readyz`)).status === 200);

    await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'watched' }, data: { value: 'w' } } });
    await waitFor('the watch event to be reconciled', 30_000, async () => {
      try {
        return (await sb.core.readNamespacedConfigMap({ namespace: sb.namespace, name: 'watched-mirror' })).data?.value === 'w';
      } catch {
        return false;
      }
    });

    const url = `${ops}/api/resync/configmap-mirror/${sb.namespace}/watched`;
    expect((await fetch(url, { method: 'POST' })).status).toBe(401);
    const runs = Number(await sb.redis.get(`${prefix}:mirror:runs:${sb.namespace}/watched`));
    const ok = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    await waitFor('the manual resync to reconcile it again', 15_000, async () => Number(await sb.redis.get(`${prefix}:mirror:runs:${sb.namespace}/watched`)) > runs);

    const queues = (await (await fetch(`${ops}/ui/api/queues`)).json()) as { queues: Array<{ name: string }> };
    expect(queues.queues.map((q) => q.name).sort()).toEqual(['configmap-mirror', 'slow', 'storm']);
    expect(await (await fetch(`${ops}/metrics`)).text()).toMatch(/bullmq_job_count\{queue="configmap-mirror",state="waiting"\}/);

    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
    expect(cli.output()).toContain('ripple is running');
    expect(cli.output()).not.toContain(TOKEN);
  });

  it('serve refuses to start without RIPPLE_FUNCTION_TOKEN, unless told a mesh authenticates callers', async () => {
    // Explicitly empty, so nothing inherited from the test runner's environment counts.
    const env = { RIPPLE_PREFIX: `${sb.prefix}-noauth`, SLOW_MS: '0', PORT: '0', RIPPLE_SERVE_HOST: '127.0.0.1', RIPPLE_FUNCTION_TOKEN: '', RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: '' };
    await expect(startCli(['serve', '--function', 'slow', ...common()], env, { capture: true })).rejects.toThrow(
      /refusing to serve slow without RIPPLE_FUNCTION_TOKEN.*RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED=true/,
    );
    await expect(startCli(['serve', '--function', 'slow', ...common()], { ...env, RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: 'yes' }, { capture: true })).rejects.toThrow(
      /RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED must be "true" or "false"/,
    );
    const open = await startCli(['serve', '--function', 'slow', ...common()], { ...env, RIPPLE_FUNCTION_ALLOW_UNAUTHENTICATED: 'true' }, { capture: true });
    clis.push(open);
    const res = await fetch(`http://127.0.0.1:${open.port}/`, { method: 'POST', body: JSON.stringify({ key: 'ns/open' }) });
    expect(res.status).toBe(200);
    expect(open.output()).toContain('serving without a token');
  });

  it('refuses bad invocations with a message', async () => {
    await expect(startCli(['serve', ...common()], {}, { capture: true })).rejects.toThrow(/serve needs --function/);
    await expect(startCli(['worker', '--dispatch', 'nope', ...common()], {}, { capture: true })).rejects.toThrow(/expected <function>=<url>/);
    await expect(startCli(['worker', '--functions', 'slow', '--dispatch', 'slow=http://x', ...common()], {}, { capture: true })).rejects.toThrow(/both in --functions and --dispatch/);
    await expect(startCli(['all', ...common()], { RIPPLE_OPS_TOKEN: 'short' }, { capture: true })).rejects.toThrow(/RIPPLE_OPS_TOKEN must be at least 16 characters/);
  });
});
