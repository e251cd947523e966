import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';

// `npm start` as a person runs it — npm, scripts/start.sh, `ripple all` on its own sandbox and its own
// redis-server — ended by each signal that ends it in real life, and then searched for anything left
// running. Each run has a sandbox dir of its own (RIPPLE_SANDBOX_DIR, never the shared .sandbox), a
// free ops port and one KWOK node, so it touches nothing another test uses.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const READY = 'ripple is running; Ctrl-C stops it';

interface LogLine {
  level?: number;
  msg?: string;
  pid?: number;
  [k: string]: unknown;
}

interface Run {
  /** npm: the leader of the process group a terminal would signal. */
  npm: ChildProcess;
  exited: Promise<void>;
  dir: string;
  /** Every line on stdout and stderr, JSON lines parsed. */
  lines: Array<LogLine | string>;
  /** The Ripple (node) process. */
  ripple: number;
  /** What the sandbox recorded in its pids file (etcd, kube-apiserver, …) and the redis-server. */
  components: Array<{ name: string; pid: number }>;
}

const runs: Run[] = [];
const dirs: string[] = [];

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

/** The redis-server serving `port` (redis-server renames its process title to `redis-server 127.0.0.1:<port>`). */
function redisServerPid(port: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.startsWith('redis-server') && cmd.includes(`127.0.0.1:${port}`)) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function newDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-signals-'));
  rmSync(dir, { recursive: true }); // the sandbox creates it; an empty one would read as a stopped sandbox
  dirs.push(dir);
  return dir;
}

const text = (l: LogLine | string) => (typeof l === 'string' ? l : `${l.msg ?? ''} ${typeof l.err === 'string' ? l.err : ''}`.trim());

/** `npm start` in a process group of its own, until Ripple logs that it is running. */
async function start(dir: string): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, RIPPLE_SANDBOX_DIR: dir, RIPPLE_OPS_PORT: '0', RIPPLE_SANDBOX_NODES: '1', RIPPLE_LOG_FORMAT: 'json', LOG_LEVEL: 'info' };
  // The embedded default, as a new user gets it: no Redis or cluster from the test's environment.
  for (const name of ['REDIS_URL', 'REDIS_URL_FILE', 'RIPPLE_KUBECONFIG', 'RIPPLE_IN_CLUSTER', 'KUBECONFIG', 'RIPPLE_MODE']) delete env[name];
  const npm = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<LogLine | string> = [];
  const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
  for (const stream of [npm.stdout!, npm.stderr!]) {
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      const parts = (rest + chunk.toString()).split('\n');
      rest = parts.pop() ?? '';
      for (const line of parts) {
        if (!line.trim()) continue;
        try {
          lines.push(JSON.parse(line) as LogLine);
        } catch {
          lines.push(line);
        }
      }
    });
  }
  const run: Run = { npm, exited, dir, lines, ripple: 0, components: [] };
  runs.push(run);
  const ready = await waitFor(`npm start to log "${READY}"`, 150_000, async () => {
    if (npm.exitCode !== null) throw new Error(`npm start exited with ${npm.exitCode}:\n${lines.map(text).join('\n')}`);
    return lines.find((l): l is LogLine => typeof l !== 'string' && l.msg === READY);
  }, 250);
  run.ripple = ready.pid!;
  run.components = readFileSync(path.join(dir, 'pids'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const [name, pid] = l.split(' ');
      return { name: name!, pid: Number(pid) };
    });
  const redisLine = lines.map(text).find((l) => l.includes('redis: started redis-server on'));
  const port = /redis:\/\/127\.0\.0\.1:(\d+)/.exec(redisLine ?? '')?.[1];
  const redis = port ? redisServerPid(port) : undefined;
  expect(redis, `the redis-server of ${redisLine}`).toBeDefined();
  run.components.push({ name: 'redis-server', pid: redis! });
  for (const c of run.components) expect(alive(c.pid), `${c.name} (${c.pid}) runs`).toBe(true);
  return run;
}

/** Processes whose command line names the sandbox dir (every component up.sh starts is given paths in it). */
function namingDir(dir: string): Array<{ name: string; pid: number }> {
  const out: Array<{ name: string; pid: number }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd.some((a) => a.includes(dir)) && alive(Number(entry))) out.push({ name: path.basename(cmd[0] ?? '?'), pid: Number(entry) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Waits until none of the run's processes is left, or fails naming those that are. */
async function nothingLeft(run: Run, why: string, successor?: Run): Promise<void> {
  const all = [{ name: 'ripple', pid: run.ripple }, ...run.components];
  // A successor run in the same dir names it too: its processes are not this run's leftovers.
  const ours = successor ? new Set([successor.ripple, ...successor.components.map((c) => c.pid)]) : new Set<number>();
  const stray = () => namingDir(run.dir).filter((c) => !ours.has(c.pid));
  await waitFor(`${why}: every process of the run to be gone`, 60_000, async () => all.every((c) => !alive(c.pid)) && stray().length === 0, 250).catch(() => {
    const left = [...all.filter((c) => alive(c.pid)), ...stray()].map((c) => `${c.name} (${c.pid})`);
    throw new Error(`${why}: still running after 60 s: ${left.join(', ')}\nthe run's output:\n${run.lines.map(text).join('\n')}`);
  });
}

/** Error lines (pino level 50 and above) logged from the signal on. */
function errorsAfter(run: Run, from: number): string[] {
  return run.lines
    .slice(from)
    .filter((l): l is LogLine => typeof l !== 'string' && (l.level ?? 0) >= 50)
    .map((l) => JSON.stringify(l));
}

async function endsCleanly(signal: NodeJS.Signals, target: 'group' | 'ripple'): Promise<void> {
  const run = await start(newDir());
  const from = run.lines.length;
  process.kill(target === 'group' ? -run.npm.pid! : run.ripple, signal);
  await nothingLeft(run, `after ${signal} to ${target === 'group' ? 'the process group' : 'the Ripple process'}`);
  await run.exited;
  expect(errorsAfter(run, from)).toEqual([]);
  expect(existsSync(run.dir), 'the sandbox state is removed').toBe(false);
  const said = run.lines.slice(from).map(text);
  expect(said).toContain('stopped');
}

afterAll(async () => {
  // Whatever a failed test left: every recorded process, then the sandbox's own teardown.
  for (const run of runs) {
    for (const c of [{ pid: run.ripple }, ...run.components]) if (c.pid && alive(c.pid)) process.kill(c.pid, 'SIGKILL');
    if (run.npm.exitCode === null && run.npm.signalCode === null) process.kill(-run.npm.pid!, 'SIGKILL');
  }
  for (const dir of dirs) {
    if (existsSync(dir)) spawnSync('bash', ['infra/local-control-plane/down.sh'], { cwd: root, env: { ...process.env, RIPPLE_SANDBOX_DIR: dir } });
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('npm start leaves nothing behind, whatever ends it', { concurrent: false }, () => {
  it('SIGHUP to the process group (a closed terminal, a dropped SSH session): stops like Ctrl-C', async () => {
    await endsCleanly('SIGHUP', 'group');
  }, 240_000);

  it('SIGINT to the process group (Ctrl-C: npm forwards it too): stops everything, logs no error', async () => {
    await endsCleanly('SIGINT', 'group');
  }, 240_000);

  it('SIGTERM to the Ripple process: stops everything', async () => {
    await endsCleanly('SIGTERM', 'ripple');
  }, 240_000);

  it('SIGKILL: the next npm start stops what the dead one left, and so does npm run sandbox:down', async () => {
    const dir = newDir();
    const killed = await start(dir);
    process.kill(killed.ripple, 'SIGKILL');
    await killed.exited;
    // What a dead Ripple leaves: the control plane in its own sessions, and its redis-server.
    for (const c of killed.components) expect(alive(c.pid), `${c.name} outlives a SIGKILLed Ripple`).toBe(true);

    const next = await start(dir);
    expect(next.lines.map(text)).toContainEqual(expect.stringContaining(`the Ripple process ${killed.ripple} that started the sandbox in ${dir} is gone`));
    expect(next.lines.map(text)).toContainEqual(expect.stringContaining(`stopped redis-server (pid ${killed.components.at(-1)!.pid})`));
    await nothingLeft(killed, 'after the next npm start', next);
    for (const c of next.components) expect(killed.components.map((k) => k.pid)).not.toContain(c.pid);

    process.kill(next.ripple, 'SIGKILL');
    await next.exited;
    const down = spawnSync('npm', ['run', 'sandbox:down'], { cwd: root, env: { ...process.env, RIPPLE_SANDBOX_DIR: dir }, encoding: 'utf8' });
    expect(down.status, down.stderr).toBe(0);
    expect(down.stdout).toContain(`the Ripple process ${next.ripple} that started this sandbox is not running any more`);
    expect(down.stdout).toContain(`stopped redis-server (pid ${next.components.at(-1)!.pid})`);
    await nothingLeft(next, 'after npm run sandbox:down');
    expect(existsSync(dir)).toBe(false);
  }, 420_000);
});
