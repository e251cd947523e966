import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelServingRoleStatusReader } from '../../functions/reconcile-modelserving/role-status-reader.js';
import { opsApp, startOpsServer, type RunningOpsServer } from '../../ops/server.js';
import { createLogger } from '../../base/log.js';
import { createMs, modelServingFunctions, msManifest, waitConverged } from '../fixtures/modelserving-fixtures.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, type TestSandbox } from '../harness/sandbox.js';

// `ripple status`, `ripple roles`, `ripple resync`: the CLI as a person runs it (a child process),
// against a real ops server over the ModelServing function running on the sandbox.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TOKEN = 'cli-commands-token-0123456789abcdef';
const NAME = 'chat';

let sb: TestSandbox;
let ripple: RunningRipple;
let server: RunningOpsServer;
let base: string;
let dir: string;

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'cli/ripple.ts', ...args],
      { cwd: root, env: { ...process.env, RIPPLE_OPS_TOKEN: '', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** The column each header starts at, so a test can check every row lines up under it. */
function columns(header: string): number[] {
  return [...header.matchAll(/(?:^|\s{2,})(\S)/g)].map((m) => m.index! + m[0].length - 1);
}

beforeAll(async () => {
  sb = await openSandbox('cli-cmd');
  dir = mkdtempSync(path.join(tmpdir(), 'ripple-cli-'));
  ripple = await startRipple(sb, modelServingFunctions());
  const log = createLogger('cli-commands-test', 'warn');
  const host = ripple.host;
  const app = opsApp({
    registry: new Registry(),
    live: () => [],
    ready: async () => [],
    control: {
      host,
      token: TOKEN,
      roles: modelServingRoleStatusReader(host.redis, host.prefix),
      log,
      process: { mode: 'all', watches: () => ripple.watcher.health(), workers: { functions: host.functions.map((f) => f.name), running: () => host.workersRunning() } },
    },
  });
  server = await startOpsServer({ app, port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${server.port}`;
  await createMs(sb, msManifest(NAME, sb.namespace, { replicas: 2, roles: [{ name: 'prefill', replicas: 1, workerReplicas: 1 }, { name: 'decode', replicas: 1, workerReplicas: 0 }] }));
  await waitConverged(sb, NAME, { podsPerGroup: 3 });
});
afterAll(async () => {
  await server?.close();
  await ripple?.stop();
  rmSync(dir, { recursive: true, force: true });
  await sb?.cleanup();
});

describe('ripple ops commands', () => {
  it('ripple roles NAMESPACE/NAME prints an aligned table of a converged ModelServing\'s groups and roles', async () => {
    const r = await cli(['roles', `${sb.namespace}/${NAME}`, '--server', base]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^GROUP\s+GROUP STATE\s+ROLE\s+ROLE ID\s+STATE\s+REVISION$/);
    const rows = lines.slice(1).map((l) => l.split(/\s{2,}/));
    expect(rows.map((c) => c.slice(0, 5).join(' '))).toEqual([
      'chat-0 Running decode decode-0 Running',
      'chat-0 Running prefill prefill-0 Running',
      'chat-1 Running decode decode-0 Running',
      'chat-1 Running prefill prefill-0 Running',
    ]);
    // Aligned: every cell starts at its header's column.
    const at = columns(lines[0]!);
    for (const line of lines.slice(1)) expect(columns(line)).toEqual(at);

    const json = await cli(['roles', `${sb.namespace}/${NAME}`, '--server', base, '-o', 'json']);
    expect(json.code).toBe(0);
    const body = z.object({ entries: z.array(z.object({ key: z.string(), value: z.object({ roles: z.record(z.string(), z.object({ state: z.string() }).passthrough()) }).passthrough() })) }).parse(JSON.parse(json.stdout));
    expect(body.entries[0]?.key).toBe(`${sb.namespace}/${NAME}`);
    expect(Object.values(body.entries[0]!.value.roles).map((x) => x.state)).toEqual(['Running', 'Running', 'Running', 'Running']);

    const missing = await cli(['roles', `${sb.namespace}/nothing`, '--server', base]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/404 from the ops server: no role status stored/);
  });

  it('ripple resync without a token fails and says how to give one; with --token-file it enqueues', async () => {
    const before = await ripple.host.queue('reconcile-modelserving').bull.getJobCounts('completed', 'waiting', 'active', 'delayed');
    const refused = await cli(['resync', 'reconcile-modelserving', `${sb.namespace}/${NAME}`, '--server', base]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim()).toBe(
      'ripple: resync changes state and needs the ops token: set RIPPLE_OPS_TOKEN=<token> or pass --token-file PATH (the token the ops server was started with)',
    );
    // Nothing reached the queue.
    expect(await ripple.host.queue('reconcile-modelserving').bull.getJobCounts('completed', 'waiting', 'active', 'delayed')).toEqual(before);

    const wrong = await cli(['resync', '--server', base], { RIPPLE_OPS_TOKEN: 'not-the-token-0123456789' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/401 from the ops server: invalid token/);

    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`);
    const one = await cli(['resync', 'reconcile-modelserving', `${sb.namespace}/${NAME}`, '--server', base, '--token-file', tokenFile]);
    expect(one.stderr).toBe('');
    expect(one.code).toBe(0);
    expect(one.stdout.trim()).toMatch(new RegExp(`^reconcile-modelserving ${sb.namespace}/${NAME}: (add|coalesced|reschedule|deferred)$`));

    const fn = await cli(['resync', 'reconcile-modelserving', '--server', base, '-o', 'json'], { RIPPLE_OPS_TOKEN: TOKEN });
    expect(fn.code).toBe(0);
    expect(JSON.parse(fn.stdout)).toMatchObject({ scope: 'function', function: 'reconcile-modelserving', enqueued: 1, keys: [{ key: `${sb.namespace}/${NAME}` }] });
  });

  it('ripple status prints queues, watches and workers as tables, and -o json for scripts', async () => {
    const r = await cli(['status', '--server', base]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [queues, watches] = r.stdout.split('\n\n');
    const qLines = queues!.split('\n');
    expect(qLines[0]).toMatch(/^QUEUE\s+WAITING\s+ACTIVE\s+DELAYED\s+FAILED\s+COMPLETED\s+BACKLOG\s+WORKERS$/);
    expect(qLines.slice(1).map((l) => l.split(/\s+/)[0]).sort()).toEqual(['emit-events', 'reconcile-modelserving']);
    const at = columns(qLines[0]!);
    for (const line of qLines.slice(1)) expect(columns(line)).toEqual(at);
    // Workers run in this host for both queues: BullMQ counts them.
    for (const line of qLines.slice(1)) expect(Number(line.split(/\s+/).at(-1))).toBeGreaterThan(0);
    expect(watches).toMatch(/^WATCH\s+UP\s+SYNCED\s+DOWN\s+ERROR$/m);
    expect(watches).toMatch(/^modelservings\.workload\.serving\.volcano\.sh\/v1alpha1\s+yes\s+yes\s+-\s+-$/m);
    expect(r.stdout).toMatch(/workers in this process: reconcile-modelserving, emit-events \(running\)/);

    const json = await cli(['status', '--server', base, '-o', 'json']);
    expect(json.code).toBe(0);
    const body = z
      .object({ queues: z.array(z.object({ name: z.string(), counts: z.record(z.string(), z.number()), workers: z.number() })), watches: z.array(z.object({ resource: z.string(), up: z.boolean() })) })
      .parse(JSON.parse(json.stdout));
    expect(body.queues.map((q) => q.name).sort()).toEqual(['emit-events', 'reconcile-modelserving']);
    expect(body.watches.every((w) => w.up)).toBe(true);

    const nowhere = await cli(['status', '--server', 'http://127.0.0.1:9']);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/^ripple: cannot reach the ops server at http:\/\/127\.0\.0\.1:9 .*pass --server URL/);
    const badOutput = await cli(['status', '--server', base, '-o', 'yaml']);
    expect(badOutput.stderr).toMatch(/only -o json is supported/);
  });
});
