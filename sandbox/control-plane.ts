import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const scripts = path.join(root, 'infra', 'local-control-plane');

export interface ControlPlane {
  kubeconfig: string;
  /** True when this call started it (and so stop() will stop it). */
  startedHere: boolean;
  stop(): Promise<void>;
}

export interface ControlPlaneOptions {
  /** Use a running cluster instead: its kubeconfig path. */
  kubeconfig?: string;
  /** Where the sandbox keeps its state (RIPPLE_SANDBOX_DIR); default .sandbox/ in the repository. */
  dir?: string;
  log?: (line: string) => void;
}

/**
 * Brings the local control plane up (building it first if needed) or adopts one that is already
 * running. The scripts print their own progress, which is passed through line by line.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  if (opts.kubeconfig) {
    return { kubeconfig: opts.kubeconfig, startedHere: false, stop: async () => undefined };
  }
  const dir = opts.dir ?? process.env.RIPPLE_SANDBOX_DIR ?? path.join(root, '.sandbox');
  const wasRunning = existsSync(path.join(dir, 'pids'));
  const env = { ...process.env, RIPPLE_SANDBOX_DIR: dir };
  await run(path.join(scripts, 'up.sh'), env, opts.log);
  const kubeconfig = path.join(dir, 'kubeconfig');
  return {
    kubeconfig,
    startedHere: !wasRunning,
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
