import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { packageRoot } from '../runtime/package-root.js';

// The real node beside the sandbox's KWOK nodes (infra/local-control-plane/node-up.sh): its fixed names, and
// the checks that stopping it left nothing on the machine.

const root = packageRoot(import.meta.url);
const scripts = path.join(root, 'infra', 'local-control-plane');

const NodeEnv = z.object({
  REAL_NODE_NAME: z.string().min(1),
  REAL_NODE_TAINT_KEY: z.string().min(1),
  REAL_NODE_BRIDGE: z.string().min(1),
  REAL_NODE_POD_SUBNET: z.string().min(1),
  REAL_NODE_IP: z.string().min(1),
  REAL_NODE_DNS_IP: z.string().min(1),
});

export interface RealNode {
  name: string;
  taintKey: string;
  bridge: string;
  podSubnet: string;
  ip: string;
  dnsIp: string;
  /** What a pod needs to be scheduled there: the taint's toleration and the node's name as a selector. */
  toleration: { key: string; operator: 'Exists'; effect: 'NoSchedule' };
}

/** The real node's names and addresses, from node.env (the scripts read the same file). */
export function realNode(): RealNode {
  const text = readFileSync(path.join(scripts, 'node.env'), 'utf8');
  const vars: Record<string, string> = {};
  for (const m of text.matchAll(/^([A-Z_]+)=("?)(.*)\2$/gm)) vars[m[1] ?? ''] = m[3] ?? '';
  const env = NodeEnv.parse(vars);
  return {
    name: env.REAL_NODE_NAME,
    taintKey: env.REAL_NODE_TAINT_KEY,
    bridge: env.REAL_NODE_BRIDGE,
    podSubnet: env.REAL_NODE_POD_SUBNET,
    ip: env.REAL_NODE_IP,
    dnsIp: env.REAL_NODE_DNS_IP,
    toleration: { key: env.REAL_NODE_TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' },
  };
}

/** Starts the real node in the sandbox at `sandboxDir`, or checks it when it already runs. */
export function startRealNode(sandboxDir: string, log: (line: string) => void = console.error): Promise<void> {
  return runScript('node-up.sh', sandboxDir, log);
}

/** Stops the real node and removes every trace of it (node-down.sh). */
export function stopRealNode(sandboxDir: string, log: (line: string) => void = console.error): Promise<void> {
  return runScript('node-down.sh', sandboxDir, log);
}

function runScript(script: string, sandboxDir: string, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(scripts, script)], {
      env: { ...process.env, RIPPLE_SANDBOX_DIR: sandboxDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const forward = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) log(line);
    };
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${script} exited with ${code}; its output is above`))));
  });
}

/**
 * Everything a stopped real node could have left on this machine, each as one line naming it: processes
 * (kubelet, kube-proxy, CoreDNS, containerd, its shims, container processes in kubepods cgroups, the API server's
 * forward on the bridge address), mounts
 * under the node's state, network namespaces, iptables chains (kube-proxy's, the kubelet's, CNI's) in both
 * families, the bridge, the kubepods cgroups. Empty when the node left nothing.
 */
export function realNodeLeftovers(sandboxDir: string): string[] {
  const node = realNode();
  const nodeDir = path.join(sandboxDir, 'node');
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    const cmdline = readProc(`/proc/${pid}/cmdline`).split('\0').join(' ');
    const cgroup = readProc(`/proc/${pid}/cgroup`);
    if (cmdline.includes(nodeDir) || cmdline.includes(`api-forward.mjs ${node.ip} `)) found.push(`process ${pid}: ${cmdline.slice(0, 160)}`);
    else if (/:\/kubepods/.test(cgroup)) found.push(`container process ${pid} (kubepods cgroup): ${cmdline.slice(0, 160)}`);
  }
  for (const line of readProc('/proc/mounts').split('\n')) {
    const where = line.split(' ')[1] ?? '';
    if (where.startsWith(`${nodeDir}/`) || where.startsWith('/var/run/netns/cni-') || where.startsWith('/run/netns/cni-'))
      found.push(`mount ${where}`);
  }
  for (const dir of ['/var/run/netns', '/run/netns']) {
    if (existsSync(dir)) for (const ns of readdirSync(dir)) if (ns.startsWith('cni-')) found.push(`network namespace ${dir}/${ns}`);
  }
  for (const tool of ['iptables-save', 'ip6tables-save']) {
    const saved = spawnSync(tool, [], { encoding: 'utf8' });
    if (saved.status !== 0) throw new Error(`${tool} failed: ${saved.stderr}`);
    for (const line of saved.stdout.split('\n')) if (/(^:| -j )(KUBE|CNI)-/.test(line)) found.push(`${tool}: ${line}`);
  }
  if (existsSync(`/sys/class/net/${node.bridge}`)) found.push(`bridge ${node.bridge}`);
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    for (const group of ['kubepods', 'k8s.io']) {
      if (existsSync(`/sys/fs/cgroup/${hierarchy}/${group}`)) found.push(`cgroup /sys/fs/cgroup/${hierarchy}/${group}`);
    }
  }
  if (existsSync(nodeDir)) found.push(`state directory ${nodeDir}`);
  return found;
}

/**
 * Whether kube-proxy has programmed the host's NAT rules to send the Service `namespace/name` to `endpoint`
 * (ip:port): a DNAT rule with the Service's comment. Until then a client gets "connection refused" (kube-proxy
 * rejects a Service it knows no ready endpoint for), as on any cluster right after an endpoint appears.
 */
export function kubeProxyRoutes(namespace: string, name: string, endpoint: string): boolean {
  const saved = spawnSync('iptables-save', ['-t', 'nat'], { encoding: 'utf8' });
  if (saved.status !== 0) throw new Error(`iptables-save failed: ${saved.stderr}`);
  return saved.stdout.split('\n').some((l) => l.includes(`${namespace}/${name}`) && l.includes(`--to-destination ${endpoint}`));
}

/** The host settings the node changes (node.env REAL_NODE_SYSCTLS) and their current values. */
export function realNodeSysctls(): Record<string, string> {
  const text = readFileSync(path.join(scripts, 'node.env'), 'utf8');
  const names = /^REAL_NODE_SYSCTLS="(.*)"$/m.exec(text)?.[1]?.split(/\s+/) ?? [];
  return Object.fromEntries(names.map((n) => [n, readProc(`/proc/sys/${n}`).trim()]));
}

function readProc(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
