import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../runtime/package-root.js';

const root = packageRoot(import.meta.url);
const scripts = path.join(root, 'infra', 'local-control-plane');

export interface ControlPlane {
  kubeconfig: string;
  /** True when this call started it (and so stop() will stop it). */
  startedHere: boolean;
  /**
   * Records a process this one started beside the sandbox (its redis-server), so that should this
   * process die without stopping it, the next start or `npm run sandbox:down` does. Only the sandbox's
   * owner records: an adopted sandbox outlives this process and is not ours to stop.
   */
  recordProcess(name: string, pid: number): void;
  stop(): Promise<void>;
}

export interface ControlPlaneOptions {
  /** Use a running cluster instead: its kubeconfig path. */
  kubeconfig?: string;
  /** Where the sandbox keeps its state (RIPPLE_SANDBOX_DIR); default .sandbox/ in the repository. */
  dir?: string;
  log?: (line: string) => void;
  /**
   * Record this process as the owner of a sandbox it starts, and stop first a sandbox whose recorded
   * owner died. The main command (`npm start`) sets it; the test harness and benches do not: they adopt
   * whatever runs (a sandbox shared by several test runs must not be torn down by the next one).
   */
  owner?: boolean;
  /**
   * Start the real node beside the KWOK nodes (up.sh with RIPPLE_REAL_NODE=1). Only the test harness's shared
   * sandbox asks for it: there is one real node per machine, so every other sandbox (`npm start`, a test's own
   * control plane) is started without one whatever RIPPLE_REAL_NODE the environment carries.
   */
  realNode?: boolean;
}

/**
 * A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or undefined when
 * it is not running. With the pid it names one process: a pid reused by another process has another
 * start time, so a record never leads to stopping a stranger.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** `ripple <pid> <start time>`: the process that started the sandbox in `dir` and is to stop it. */
export const OWNER_FILE = 'owner';
/** `<name> <pid> <start time>` lines: what the owner started beside the control plane (down.sh stops them). */
export const OWNED_FILE = 'owned';

/** The pid of the process that started the sandbox in `dir` when that process is gone; undefined otherwise. */
export function deadOwner(dir: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(dir, OWNER_FILE), 'utf8');
  } catch {
    return undefined; // started by `npm run sandbox:up` (or before owners were recorded): nobody owns it
  }
  const [, pid, start] = text.trim().split(/\s+/);
  const n = Number(pid);
  if (!Number.isInteger(n) || n <= 0) return undefined;
  return processStartTime(n) === start ? undefined : n;
}

/**
 * Brings the local control plane up (building it first if needed) or adopts one that is already
 * running. The scripts print their own progress, which is passed through line by line. A sandbox whose
 * owner died (SIGKILL, a crash) is stopped first, with what the owner started beside it, and started
 * again: adopting it would leave it to nobody.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  if (opts.kubeconfig) {
    return { kubeconfig: opts.kubeconfig, startedHere: false, recordProcess: () => undefined, stop: async () => undefined };
  }
  const dir = opts.dir ?? process.env.RIPPLE_SANDBOX_DIR ?? path.join(root, '.sandbox');
  const env = { ...process.env, RIPPLE_SANDBOX_DIR: dir, RIPPLE_REAL_NODE: opts.realNode ? '1' : '0' };
  const orphanedBy = opts.owner ? deadOwner(dir) : undefined;
  if (orphanedBy !== undefined) {
    (opts.log ?? console.error)(`sandbox: the Ripple process ${orphanedBy} that started the sandbox in ${dir} is gone; stopping what it left running`);
    await run(path.join(scripts, 'down.sh'), env, opts.log);
  }
  const wasRunning = existsSync(path.join(dir, 'pids'));
  const owns = opts.owner === true && !wasRunning;
  if (owns) {
    // Before up.sh, so a process killed while it starts the sandbox still leaves its owner record.
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, OWNER_FILE), `ripple ${process.pid} ${processStartTime(process.pid) ?? ''}\n`);
  }
  await run(path.join(scripts, 'up.sh'), env, opts.log);
  const kubeconfig = path.join(dir, 'kubeconfig');
  return {
    kubeconfig,
    startedHere: !wasRunning,
    recordProcess: (name, pid) => {
      if (owns) appendFileSync(path.join(dir, OWNED_FILE), `${name} ${pid} ${processStartTime(pid) ?? ''}\n`);
    },
    stop: async () => {
      if (!wasRunning) await run(path.join(scripts, 'down.sh'), env, opts.log);
    },
  };
}

function run(script: string, env: NodeJS.ProcessEnv, log?: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const forward = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) (log ?? console.error)(line);
    };
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(script)} exited with ${code}; its output is above`)),
    );
  });
}
