import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Starts a TypeScript file as a separate Node process (through tsx) and waits for it to say 'ready'. */
export async function startProcess(file: string, env: Record<string, string>, timeoutMs = 30_000): Promise<ChildProcess> {
  const child = fork(path.join(root, file), [], {
    env: { ...process.env, ...env },
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${file} did not become ready within ${timeoutMs} ms`)), timeoutMs);
      child.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${file} exited with ${code} before it was ready`));
      });
    });
  } catch (err) {
    // The caller never gets a child that failed to start, so it cannot stop it: a process left running
    // here would keep watching, enqueueing or holding a lease into the tests that follow.
    await stopProcess(child, 'SIGKILL');
    throw err;
  }
  return child;
}

export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await exited;
}
