// Ripple's image, compiled JavaScript against TypeScript through tsx, per mode (watcher, worker, ops, serve):
// RSS once ready and after settling, start-to-ready time, and the image's size. Both images are built here
// with buildah from the same sources, the same lockfile and the same node base:
//   compiled  infra/images/build.sh ripple (infra/deploy/Dockerfile: `npm run build`, `node dist/cli/ripple.js`)
//   tsx       the image as it was before the build step (sources, production dependencies plus tsx and esbuild,
//             `node --import tsx cli/ripple.ts`), written below; its layers come from the same --layers cache.
// Each process runs from its image's root filesystem (buildah mount) under chroot as uid 1000: the image's own
// node binary, libraries and files, as a host process (no namespaces or cgroup limits, which change neither
// RSS nor start-up). Against the sandbox's API server (adopted) and a redis-server started here; modes and
// variants alternate in one run, one process at a time; tsx's cache (/tmp/tsx-*) is emptied before each tsx
// start, as a new pod's emptyDir /tmp would be. Needs root (chroot, buildah's storage). BENCH_ROUNDS (3) runs
// per mode and variant; BENCH_SETTLE_MS (5000) between ready and the settled RSS sample.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { z } from 'zod';
import { loadKubeConfig } from '../kube/config.js';
import { startControlPlane } from '../sandbox/control-plane.js';
import { freePort } from '../sandbox/free-port.js';
import { startRedis } from '../sandbox/redis.js';
import { nowMs, percentile, round } from './stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 5000);
const MODES = ['watcher', 'worker', 'ops', 'serve'] as const;
type Mode = (typeof MODES)[number];
const VARIANTS = ['compiled', 'tsx'] as const;
type Variant = (typeof VARIANTS)[number];

const store = process.env.RIPPLE_BUILDAH_DIR ?? path.join(root, '.cache', 'control-plane', 'buildah');
const buildah = (...args: string[]) =>
  execFileSync('buildah', ['--root', path.join(store, 'storage'), '--runroot', path.join(store, 'run'), '--storage-driver', 'overlay', ...args], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  }).trim();
const version = z.object({ version: z.string() }).parse(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))).version;
const IMAGES: Record<Variant, string> = { compiled: `ripple.local/ripple:${version}`, tsx: `ripple.local/ripple:${version}-tsx` };
const NODE_VERSION = /^NODE_VERSION=(\S+)$/m.exec(readFileSync(path.join(root, 'infra/images/versions.env'), 'utf8'))?.[1];
if (!NODE_VERSION) throw new Error('infra/images/versions.env has no NODE_VERSION');
const BASE = `docker.io/library/node:${NODE_VERSION}-bookworm-slim`;
const COMMAND: Record<Variant, string> = { compiled: 'node dist/cli/ripple.js', tsx: 'node --import tsx cli/ripple.ts' };

// The production dependencies exactly as infra/deploy/Dockerfile installs them (the same layer, from the cache).
const DEPS_RUN = /^RUN .*npm ci --omit=dev.*$/m.exec(readFileSync(path.join(root, 'infra/deploy/Dockerfile'), 'utf8'))?.[0];
if (!DEPS_RUN) throw new Error('infra/deploy/Dockerfile has no `npm ci --omit=dev` step');
// The image before the build step, on today's sources: infra/deploy/Dockerfile's stages with the dev install
const TSX_DOCKERFILE = `ARG NODE_VERSION
FROM node:\${NODE_VERSION}-bookworm-slim AS build
ARG NODE_EXTRA_CA_CERTS
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
FROM node:\${NODE_VERSION}-bookworm-slim AS deps
ARG NODE_EXTRA_CA_CERTS
WORKDIR /app
COPY package.json package-lock.json ./
${DEPS_RUN}
FROM node:\${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production RIPPLE_IN_CLUSTER=true
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/node_modules/tsx ./node_modules/tsx
COPY --from=build /app/node_modules/esbuild ./node_modules/esbuild
COPY --from=build /app/node_modules/@esbuild ./node_modules/@esbuild
COPY . .
USER 1000:1000
ENTRYPOINT ["node", "--import", "tsx", "cli/ripple.ts"]
`;

function buildImages(work: string): void {
  execFileSync('bash', [path.join(root, 'infra/images/build.sh'), 'ripple'], { stdio: 'inherit' });
  const dockerfile = path.join(work, 'Dockerfile.tsx');
  writeFileSync(dockerfile, TSX_DOCKERFILE);
  const ca = process.env.NODE_EXTRA_CA_CERTS ? ['-v', `${process.env.NODE_EXTRA_CA_CERTS}:/ca.crt:ro`, '--build-arg', 'NODE_EXTRA_CA_CERTS=/ca.crt'] : [];
  console.log(`bench: building ${IMAGES.tsx} (the image before the build step, today's sources)`);
  const started = Date.now();
  execFileSync(
    'buildah',
    ['--root', path.join(store, 'storage'), '--runroot', path.join(store, 'run'), '--storage-driver', 'overlay', 'bud', '--quiet', '--isolation', 'chroot', '--pull=never', '--layers', ...ca,
      '--build-arg', `NODE_VERSION=${NODE_VERSION}`, '-f', dockerfile, '--ignorefile', path.join(root, 'infra/deploy/Dockerfile.dockerignore'), '-t', IMAGES.tsx, root],
    { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  console.log(`bench: ${IMAGES.tsx} built in ${round((Date.now() - started) / 1000, 0)} s`);
}

/** Bytes under a mounted root filesystem: the image unpacked, as a node's disk holds it. */
const duBytes = (dir: string) => Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);

/** The gzip-compressed layers a registry would serve (buildah push to an OCI layout, blobs summed). */
function compressedMB(image: string, work: string): number {
  const layout = path.join(work, 'layout');
  rmSync(layout, { recursive: true, force: true });
  buildah('push', '--quiet', image, `oci:${layout}`);
  const blobs = path.join(layout, 'blobs', 'sha256');
  let bytes = 0;
  for (const f of readdirSync(blobs)) bytes += statSync(path.join(blobs, f)).size;
  rmSync(layout, { recursive: true, force: true });
  return round(bytes / 1e6, 1);
}

/** CPU time a process has used (user + system), from /proc: start-up's cost whatever else the machine runs. */
function cpuMs(pid: number): number {
  // Fields after the command's closing parenthesis: state is the 3rd field, utime and stime the 14th and 15th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

function rssMiB(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return round(Number(kb) / 1024, 1);
}

interface Sample {
  variant: Variant;
  mode: Mode;
  readyMs: number;
  cpuToReadyMs: number;
  rssReadyMiB: number;
  rssSettledMiB: number;
}

interface Target {
  rootfs: string;
  redisUrl: string;
  prefix: string;
  namespace: string;
}

/** Starts one mode from one image's root filesystem, waits for /readyz, samples RSS, and stops it (SIGTERM). */
async function runOnce(variant: Variant, mode: Mode, t: Target): Promise<Sample> {
  if (variant === 'tsx') for (const d of readdirSync(path.join(t.rootfs, 'tmp'))) if (d.startsWith('tsx-')) rmSync(path.join(t.rootfs, 'tmp', d), { recursive: true, force: true });
  const port = await freePort();
  const args = ['--kubeconfig', '/tmp/kubeconfig', '--redis-url', t.redisUrl, ...(mode === 'serve' ? ['--function', 'reconcile-modelserving', '--port', String(port)] : ['--ops-port', String(port)])];
  const started = nowMs();
  const child = spawn('chroot', ['--userspec=1000:1000', t.rootfs, '/bin/sh', '-c', `cd /app && exec ${COMMAND[variant]} ${mode} ${args.join(' ')}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: '/tmp',
      NODE_ENV: 'production',
      RIPPLE_IN_CLUSTER: 'false',
      RIPPLE_PREFIX: t.prefix,
      RIPPLE_NAMESPACE: t.namespace,
      RIPPLE_WATCH_NAMESPACE: t.namespace,
      LOG_LEVEL: 'warn',
      // serve refuses to run without the token its callers (the dispatcher) send.
      RIPPLE_FUNCTION_TOKEN: randomBytes(24).toString('hex'),
    },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const label = `${variant} ${mode}`;
  try {
    const deadline = started + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${label} exited with ${child.exitCode}: ${stderr}`);
      if (nowMs() > deadline) throw new Error(`${label} was not ready within 120 s: ${stderr}`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const readyMs = round(nowMs() - started, 0);
    const pid = child.pid!;
    const rssReadyMiB = rssMiB(pid);
    const cpuToReadyMs = cpuMs(pid);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const rssSettledMiB = rssMiB(pid);
    console.log(`bench: ${label.padEnd(16)} ready in ${readyMs} ms (${cpuToReadyMs} ms of CPU), RSS ${rssReadyMiB} MiB at ready, ${rssSettledMiB} MiB after ${SETTLE_MS / 1000} s`);
    return { variant, mode, readyMs, cpuToReadyMs, rssReadyMiB, rssSettledMiB };
  } finally {
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
  }
}

const work = path.join(root, '.cache', 'bench-image-modes');
mkdirSync(work, { recursive: true });
buildImages(work);
const sizes = {} as Record<Variant, { unpackedMB: number; compressedMB: number }>;
let baseMB: number;

const controlPlane = await startControlPlane({ log: (l) => console.error(l) });
const redisServer = await startRedis();
const kc = loadKubeConfig({ kind: 'kubeconfig', path: controlPlane.kubeconfig });
const core = kc.makeApiClient(CoreV1Api);
const namespace = `bench-image-${Date.now()}`;
await core.createNamespace({ body: { metadata: { name: namespace } } });
const containers: string[] = [];
const samples: Sample[] = [];
try {
  const rootfs = {} as Record<Variant, string>;
  for (const v of VARIANTS) {
    const c = buildah('from', '--pull=never', '--quiet', IMAGES[v]);
    containers.push(c);
    rootfs[v] = buildah('mount', c);
    sizes[v] = { unpackedMB: round(duBytes(rootfs[v]) / 1e6, 1), compressedMB: compressedMB(IMAGES[v], work) };
    // The admin kubeconfig, readable by uid 1000 inside this throwaway container only.
    const kubeconfig = path.join(rootfs[v], 'tmp', 'kubeconfig');
    copyFileSync(controlPlane.kubeconfig, kubeconfig);
    chmodSync(kubeconfig, 0o644);
  }
  const baseContainer = buildah('from', '--pull=never', '--quiet', BASE);
  containers.push(baseContainer);
  baseMB = round(duBytes(buildah('mount', baseContainer)) / 1e6, 1);
  console.log(`bench: image sizes (unpacked / compressed): compiled ${sizes.compiled.unpackedMB} / ${sizes.compiled.compressedMB} MB, tsx ${sizes.tsx.unpackedMB} / ${sizes.tsx.compressedMB} MB; the node base ${baseMB} MB unpacked`);
  for (let r = 0; r < ROUNDS; r++) {
    for (const mode of MODES) {
      // Alternate which variant goes first, so a drift in the machine's load falls on both.
      const order = (r + MODES.indexOf(mode)) % 2 === 0 ? VARIANTS : ([...VARIANTS].reverse() as Variant[]);
      for (const v of order) {
        samples.push(await runOnce(v, mode, { rootfs: rootfs[v], redisUrl: redisServer.url, prefix: `bench-image-${r}-${mode}-${v}`, namespace }));
      }
    }
  }
} finally {
  for (const c of containers) {
    buildah('umount', c);
    buildah('rm', c);
  }
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  await redisServer.stop();
  await controlPlane.stop();
}

const median = (xs: number[]) => round(percentile(xs, 50), 1);
const perMode = MODES.map((mode) => {
  const of = (v: Variant) => samples.filter((s) => s.mode === mode && s.variant === v);
  const summary = (v: Variant) => ({ readyMs: median(of(v).map((s) => s.readyMs)), cpuToReadyMs: median(of(v).map((s) => s.cpuToReadyMs)), rssReadyMiB: median(of(v).map((s) => s.rssReadyMiB)), rssSettledMiB: median(of(v).map((s) => s.rssSettledMiB)) });
  return { mode, compiled: summary('compiled'), tsx: summary('tsx') };
});
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const result = { bench: 'image-modes', at: new Date().toISOString(), rounds: ROUNDS, settleMs: SETTLE_MS, loadavg: load, images: IMAGES, sizes, nodeBaseMB: baseMB, perMode, samples };
const table = [
  '| mode | start→ready compiled / tsx (ms) | CPU to ready compiled / tsx (ms) | RSS at ready compiled / tsx (MiB) | RSS settled compiled / tsx (MiB) | tsx − compiled, settled (MiB) |',
  '| --- | --- | --- | --- | --- | --- |',
  ...perMode.map((m) => `| ${m.mode} | ${m.compiled.readyMs} / ${m.tsx.readyMs} | ${m.compiled.cpuToReadyMs} / ${m.tsx.cpuToReadyMs} | ${m.compiled.rssReadyMiB} / ${m.tsx.rssReadyMiB} | ${m.compiled.rssSettledMiB} / ${m.tsx.rssSettledMiB} | ${round(m.tsx.rssSettledMiB - m.compiled.rssSettledMiB, 1)} |`),
  `| image, unpacked / compressed (MB) | ${sizes.compiled.unpackedMB} / ${sizes.compiled.compressedMB} compiled | ${sizes.tsx.unpackedMB} / ${sizes.tsx.compressedMB} tsx | node base ${baseMB} unpacked | | |`,
].join('\n');
console.log(`\n${table}\n(medians of ${ROUNDS} runs each; load average at the end ${load})`);
writeFileSync(path.join(here, 'results/image-modes.json'), `${JSON.stringify(result, null, 2)}\n`);
writeFileSync(path.join(here, 'results/image-modes.md'), `${table}\n`);
