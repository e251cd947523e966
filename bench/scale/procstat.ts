// A process's RSS and CPU time from /proc, for any process on the machine (Ripple's, kube-apiserver,
// etcd, redis-server): what bench/scale.ts samples to say which part is the bound.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { round } from '../stats.js';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ; 100 on Linux). */
const USER_HZ = 100;

/** Resident set size in MiB, or undefined once the process is gone. */
export function rssMiB(pid: number): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds the process has used, or undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  } catch {
    return undefined;
  }
}

/** CPU seconds so far of each named process (`components`: name → pid, e.g. sandboxPids plus Redis); 0 once gone. */
export function componentsCpu(components: ReadonlyMap<string, number>): Record<string, number> {
  return Object.fromEntries([...components].map(([name, pid]) => [name, cpuSeconds(pid) ?? 0]));
}

/** What each process spent between two readings of componentsCpu, and their sum as `total`. */
export function componentsCpuBetween(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  let total = 0;
  for (const [name, then] of Object.entries(before)) {
    const spent = Math.max(0, (after[name] ?? then) - then);
    out[name] = round(spent, 2);
    total += spent;
  }
  return { ...out, total: round(total, 2) };
}

/** The machine's 1-minute load average (how busy the shared cores were meanwhile). */
export function loadAverage(): number {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
}

/** The pids the sandbox recorded (`name pid` lines in $RIPPLE_SANDBOX_DIR/pids). */
export function sandboxPids(sandboxDir: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of readFileSync(path.join(sandboxDir, 'pids'), 'utf8').split('\n')) {
    const [name, pid] = line.trim().split(/\s+/);
    if (name && pid) out.set(name, Number(pid));
  }
  return out;
}

/**
 * The processes whose CPU a bench reads, name → pid (for componentsCpu): the sandbox's (the pids it recorded in
 * `sandboxDir`; none when it was not started from there) and, given `localRedisUrl`, the Redis server behind it as
 * `redis-server`. Pass that URL only for a Redis on this machine: another machine's pid means nothing here.
 */
export async function sandboxComponents(sandboxDir: string, localRedisUrl?: string): Promise<Map<string, number>> {
  const out = existsSync(path.join(sandboxDir, 'pids')) ? sandboxPids(sandboxDir) : new Map<string, number>();
  if (localRedisUrl !== undefined) {
    const pid = await redisPid(localRedisUrl);
    if (pid !== undefined) out.set('redis-server', pid);
  }
  return out;
}

/** The pid a Redis server reports for itself (INFO server). */
async function redisPid(url: string): Promise<number | undefined> {
  const probe = new Redis(url);
  try {
    const pid = Number(/process_id:(\d+)/.exec(await probe.info('server'))?.[1]);
    return Number.isFinite(pid) ? pid : undefined;
  } finally {
    probe.disconnect();
  }
}

/** Samples the RSS of some processes every `everyMs` and keeps each one's peak. */
export class RssPeaks {
  private readonly peaks = new Map<number, number>();
  private readonly timer: NodeJS.Timeout;
  constructor(
    private readonly pids: () => number[],
    everyMs = 500,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
  }
  sample(): void {
    for (const pid of this.pids()) {
      const rss = rssMiB(pid);
      if (rss !== undefined) this.peaks.set(pid, Math.max(rss, this.peaks.get(pid) ?? 0));
    }
  }
  peak(pid: number): number | undefined {
    return this.peaks.get(pid);
  }
  stop(): void {
    clearInterval(this.timer);
  }
}
