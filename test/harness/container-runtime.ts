import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const images = path.join(root, '.cache', 'control-plane', 'images');

/** The Redis image infra/images/build.sh builds (Debian's redis-server); nothing is pulled here. */
export const REDIS_IMAGE = 'ripple.local/redis:7';

export interface ContainerRuntime {
  /** DOCKER_HOST for testcontainers: podman's Docker-compatible API on a socket of this run's own. */
  dockerHost: string;
  /** Everything this runtime keeps (config, storage, state, socket); removed by stop(). */
  dir: string;
  /**
   * The network mode its containers must ask for: slirp4netns (user-mode networking; no bridge, iptables rule
   * or CNI). The Docker API's default is a CNI bridge with its own NAT rules beside the real node's (podman's
   * compat API ignores containers.conf's netns).
   */
  networkMode: string;
  /** Runs the podman CLI on this runtime's storage (beside the service, as podman allows). */
  podman(args: string[]): SpawnSyncReturns<string>;
  /** Removes every container, stops the service and leaves nothing behind. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * A container runtime for testcontainers on a machine without Docker: Debian's podman, rootful, serving the
 * Docker API (`podman system service`) from a directory of its own, with the given image archives loaded
 * (OCI archives from infra/images/build.sh). It is kept apart from the real node: its own storage, state
 * and socket under a temporary directory; containers get slirp4netns networking (user-mode, no bridge, no
 * iptables rule, no CNI), so the real node's bridge, iptables chains and containerd are never touched.
 * Needs root (podman's rootful mode: cgroup v1 with cgroupfs here) and fails with what to do otherwise.
 */
export async function startContainerRuntime(opts: { archives: string[]; log?: (line: string) => void }): Promise<ContainerRuntime> {
  const log = opts.log ?? (() => undefined);
  const missing = ['podman', 'slirp4netns'].filter((c) => spawnSync(c, ['--version']).status !== 0);
  if (missing.length > 0) {
    throw new Error(`testcontainers runs on podman's Docker-compatible service here, and ${missing.join(' and ')} is missing: run scripts/ensure-deps.sh as root (it installs podman and slirp4netns), or apt-get install -y podman slirp4netns`);
  }
  if (process.getuid?.() !== 0) {
    throw new Error('testcontainers runs on rootful podman here (this machine has no Docker; cgroup v1 with cgroupfs): run the tests as root');
  }
  for (const a of opts.archives) {
    if (!existsSync(path.join(images, a))) {
      throw new Error(`the image archive ${path.join(images, a)} is missing: run bash infra/images/build.sh ${a.replace(/\.tar$/, '')} (scripts/ensure-deps.sh does)`);
    }
  }
  sweepStale(log);
  // Host paths podman creates on first use (runc's state, the netns mount point): removed at stop only when
  // this runtime created them.
  const hostDirs = ['/run/runc', '/run/netns'].filter((d) => !existsSync(d));
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-podman-'));
  // On a tmpfs of its own: removing an unpacked image from this machine's disk (mounted with discard) took
  // 9 s, unmounting the tmpfs takes none; the image (about 170 MB unpacked) lives in memory meanwhile.
  const tmpfs = spawnSync('mount', ['-t', 'tmpfs', '-o', 'mode=0700,size=2g', 'ripple-podman', dir], { encoding: 'utf8' });
  if (tmpfs.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`mounting a tmpfs for podman's storage on ${dir} failed: ${tmpfs.stderr}`);
  }
  writeFileSync(path.join(dir, 'owner'), String(process.pid));
  writeFileSync(path.join(dir, 'host-dirs'), JSON.stringify(hostDirs));
  writeConfig(dir);
  const env = configEnv(dir);
  const podman = (args: string[]) => spawnSync('podman', args, { env, encoding: 'utf8', timeout: 120_000 });
  let service: ChildProcess | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    podman(['rm', '--all', '--force', '--time', '2']);
    if (service && service.exitCode === null && service.signalCode === null) {
      const exited = new Promise<void>((resolve) => service!.once('exit', () => resolve()));
      service.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      service.kill('SIGKILL');
    }
    cleanUp(dir, hostDirs);
  };
  try {
    const started = Date.now();
    for (const a of opts.archives) {
      const loaded = podman(['load', '--quiet', '--input', path.join(images, a)]);
      if (loaded.status !== 0) throw new Error(`podman load ${a} failed: ${loaded.stderr}`);
    }
    const socket = path.join(dir, 'podman.sock');
    // --time=0: no idle timeout; stop() ends it. It stays in this process's group, so a test run killed as a
    // group takes it along (its containers' conmon processes are not, and cleanUp finds them by this dir).
    service = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let serviceErr = '';
    service.stderr!.on('data', (d: Buffer) => (serviceErr = (serviceErr + d.toString()).slice(-2000)));
    const deadline = Date.now() + 20_000;
    while (!(await ping(socket))) {
      if (service.exitCode !== null || Date.now() > deadline) {
        throw new Error(`podman system service did not answer on ${socket} within 20 s: ${serviceErr || `exit ${service.exitCode}`}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    log(`container runtime: podman's Docker API on unix://${socket} (${opts.archives.join(', ')} loaded, ${Date.now() - started} ms)`);
    return { dockerHost: `unix://${socket}`, networkMode: 'slirp4netns', dir, podman, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The environment testcontainers needs to use a runtime: its socket; no Ryuk (its image would be pulled,
 * and stop() removes every container anyway); the containers' ports reached on this host's loopback
 * (testcontainers would take the bridge's gateway, as this machine is itself in a container: /.dockerenv).
 */
export function testcontainersEnv(runtime: ContainerRuntime): Record<string, string> {
  return { DOCKER_HOST: runtime.dockerHost, TESTCONTAINERS_RYUK_DISABLED: 'true', TESTCONTAINERS_HOST_OVERRIDE: '127.0.0.1' };
}

function writeConfig(dir: string): void {
  for (const d of ['storage', 'run', 'tmp', 'net']) mkdirSync(path.join(dir, d));
  // default_ulimits = []: podman's default nofile limit exceeds this machine's hard limit ("error setting
  // rlimits", docs/sandbox.md); netns = slirp4netns: no bridge or iptables (see above); a network config dir
  // of its own, so /etc/cni/net.d is never read or written; tmp_dir holds libpod's locks and events.
  writeFileSync(
    path.join(dir, 'containers.conf'),
    [
      '[containers]',
      'default_ulimits = []',
      'netns = "slirp4netns"',
      '[engine]',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "file"',
      'runtime = "runc"',
      `tmp_dir = "${path.join(dir, 'tmp')}"`,
      '[network]',
      `network_config_dir = "${path.join(dir, 'net')}"`,
      '',
    ].join('\n'),
  );
  writeFileSync(
    path.join(dir, 'storage.conf'),
    ['[storage]', 'driver = "overlay"', `graphroot = "${path.join(dir, 'storage')}"`, `runroot = "${path.join(dir, 'run')}"`, ''].join('\n'),
  );
  // No registry is searched for a short name: an image missing here fails instead of being looked for outside.
  writeFileSync(path.join(dir, 'registries.conf'), 'unqualified-search-registries = []\n');
}

function configEnv(dir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CONTAINERS_CONF: path.join(dir, 'containers.conf'),
    CONTAINERS_STORAGE_CONF: path.join(dir, 'storage.conf'),
    CONTAINERS_REGISTRIES_CONF: path.join(dir, 'registries.conf'),
    // Where podman load unpacks the archive first (by default /var/tmp).
    TMPDIR: path.join(dir, 'tmp'),
  };
}

async function ping(socket: string): Promise<boolean> {
  if (!existsSync(socket)) return false;
  return new Promise((resolve) => {
    const req = request({ socketPath: socket, path: '/_ping', timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/**
 * What a test run killed before its stop() left (its owner process is gone): its containers through podman
 * (which also removes their network namespaces), then everything cleanUp removes.
 */
function sweepStale(log: (line: string) => void): void {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith('ripple-podman-'))) {
    const dir = path.join(tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(path.join(dir, 'owner'), 'utf8'));
    } catch {
      continue; // being set up by another run, or not one of these
    }
    if (alive(owner)) continue;
    spawnSync('podman', ['rm', '--all', '--force', '--time', '0'], { env: configEnv(dir), timeout: 60_000 });
    let hostDirs: string[] = [];
    try {
      hostDirs = z.array(z.string()).parse(JSON.parse(readFileSync(path.join(dir, 'host-dirs'), 'utf8')));
    } catch {
      // written just after the owner: that run had not started podman yet
    }
    cleanUp(dir, hostDirs);
    log(`container runtime: removed what a stopped test run (pid ${owner}) left in ${dir}`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * What outlives podman's service: conmon processes (a container's, and an exec session's, which waits five
 * minutes after its exec ends), their cgroups (libpod_parent in each v1 hierarchy), the storage's own mounts
 * (overlay's home is bind-mounted privately), and the host directories podman created.
 */
function cleanUp(dir: string, hostDirs: string[]): void {
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p) || Number(p) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir)) process.kill(Number(p), 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  spawnSync('sleep', ['0.3']);
  const mounts = readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '');
  for (const m of mounts.filter((m) => m === dir || m.startsWith(`${dir}/`)).sort().reverse()) {
    if (spawnSync('umount', [m]).status !== 0) spawnSync('umount', ['-l', m]);
  }
  rmSync(dir, { recursive: true, force: true });
  // libpod_parent is shared by every rootful podman with cgroupfs: only its unused cgroups go (rmdir refuses
  // a cgroup that still has processes or children).
  for (const h of existsSync('/sys/fs/cgroup') ? readdirSync('/sys/fs/cgroup') : []) {
    const parent = path.join('/sys/fs/cgroup', h, 'libpod_parent');
    if (existsSync(parent)) spawnSync('find', [parent, '-depth', '-type', 'd', '-exec', 'rmdir', '{}', ';']);
  }
  for (const d of hostDirs) {
    if (!existsSync(d) || readdirSync(d).length > 0) continue;
    if (mounts.includes(d)) spawnSync('umount', [d]);
    try {
      rmdirSync(d);
    } catch {
      // still in use by someone else: left alone
    }
  }
}
