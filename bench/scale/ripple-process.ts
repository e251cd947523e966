// Ripple as it is deployed, for bench/scale.ts: one `ripple watcher` process and W `ripple worker`
// processes (bin/ripple.js, separate processes), each with the probe loaded (probe.ts) and an IPC
// channel the bench asks for its request counts and reconcile starts.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { probeReplySchema, REQUEST_KINDS, type ProbeReply, type RequestCounts } from './probe.js';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface RippleProcessOptions {
  /** The checkout whose Ripple runs (bench/baseline.ts): a commit, not this tree's edits in progress. */
  checkout: string;
  mode: 'watcher' | 'worker';
  kubeconfig: string;
  redisUrl: string;
  prefix: string;
  namespace: string;
  opsPort: number;
  /** Written to stderr of the bench with this label (Ripple logs at warn and above). */
  label: string;
}

/** Every Ripple process still running: killed if the bench exits before stopping them. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export class RippleProcess {
  readonly child: ChildProcess;
  private exited: Promise<number | null>;

  constructor(readonly opts: RippleProcessOptions) {
    const args = ['--import', 'tsx', '--import', path.join(here, 'probe.ts'), path.join(opts.checkout, 'bin/ripple.js'), opts.mode, '--kubeconfig', opts.kubeconfig, '--redis-url', opts.redisUrl];
    // Workers run the built-in functions with each reconcile's start reported (definitions.ts).
    if (opts.mode === 'worker') args.push('--definitions', path.join(here, 'definitions.ts'));
    this.child = spawn(process.execPath, args, {
      cwd: opts.checkout,
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: {
        ...process.env,
        BENCH_SCALE_CHECKOUT: opts.checkout,
        RIPPLE_PREFIX: opts.prefix,
        RIPPLE_WATCH_NAMESPACE: opts.namespace,
        RIPPLE_OPS_PORT: String(opts.opsPort),
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
      },
    });
    this.child.stderr?.on('data', (d: Buffer) => {
      for (const line of d.toString().split('\n')) if (line.trim()) process.stderr.write(`[${opts.label}] ${line.slice(0, 500)}\n`);
    });
    live.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        live.delete(this.child);
        resolve(code);
      }),
    );
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error(`${this.opts.label} did not start`);
    return this.child.pid;
  }

  /** Request counts so far and the reconcile starts since the last call. */
  sample(timeoutMs = 30_000): Promise<ProbeReply> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.opts.label} did not answer the probe in ${timeoutMs} ms`)), timeoutMs);
      // tsx's loader may use the channel too: only the probe's replies are taken.
      const onMessage = (msg: unknown) => {
        const reply = probeReplySchema.safeParse(msg);
        if (!reply.success) return;
        clearTimeout(timer);
        this.child.off('message', onMessage);
        resolve(reply.data);
      };
      this.child.on('message', onMessage);
      this.child.send('sample');
    });
  }

  /** Resolves when its ops server answers /readyz with 200 (Redis reachable, watches synced). */
  async ready(timeoutMs = 180_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`${this.opts.label} exited with ${this.child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${this.opts.opsPort}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`${this.opts.label} was not ready within ${timeoutMs} ms`);
  }

  /** SIGTERM (Ripple drains and exits), SIGKILL after 20 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    await this.exited;
    clearTimeout(killer);
  }
}

export function zeroCounts(): RequestCounts {
  return Object.fromEntries(REQUEST_KINDS.map((k) => [k, 0])) as RequestCounts;
}

export function addCounts(a: RequestCounts, b: RequestCounts, sign = 1): RequestCounts {
  return Object.fromEntries(REQUEST_KINDS.map((k) => [k, a[k] + sign * b[k]])) as RequestCounts;
}
