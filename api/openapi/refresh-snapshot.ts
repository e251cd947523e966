/**
 * Captures the Kubernetes schemas the CRDs embed into `api/openapi/kubernetes-core-v1.json`: the API
 * server's own OpenAPI v3 document for the core group (`GET /openapi/v3/api/v1`), cut down to the schemas
 * reachable from `SNAPSHOT_ROOTS` and written unchanged (the conversion to a CRD schema happens in
 * `api/openapi/structural.ts`, when `npm run crds` runs). Refresh it when the Kubernetes version the
 * project targets moves:
 *
 *   npx tsx api/openapi/refresh-snapshot.ts --kubeconfig .sandbox/kubeconfig && npm run crds
 *
 * It asks with the kubectl the sandbox built (`.cache/control-plane/bin/kubectl`, else the one on PATH).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { SNAPSHOT_PATH, SNAPSHOT_ROOTS, type OpenApiSnapshot } from './snapshot.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const OPENAPI_PATH = '/openapi/v3/api/v1';

const documentSchema = z.object({
  info: z.object({ title: z.string(), version: z.string() }),
  components: z.object({ schemas: z.record(z.string(), z.record(z.string(), z.unknown())) }),
});
const versionSchema = z.object({ serverVersion: z.object({ gitVersion: z.string() }) });

/** The names of every schema `roots` reach through `$ref`, roots included. */
export function closureOf(schemas: Record<string, unknown>, roots: readonly string[]): string[] {
  const seen = new Set<string>();
  const queue = [...roots];
  const collect = (node: unknown, out: string[]): void => {
    if (Array.isArray(node)) for (const n of node) collect(n, out);
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (k === '$ref' && typeof v === 'string') out.push(v.slice(v.lastIndexOf('/') + 1));
        else collect(v, out);
      }
    }
  };
  while (queue.length > 0) {
    const name = queue.pop() as string;
    if (seen.has(name)) continue;
    if (!(name in schemas)) throw new Error(`${name} is referenced but not in the document`);
    seen.add(name);
    const refs: string[] = [];
    collect(schemas[name], refs);
    queue.push(...refs);
  }
  return [...seen].sort();
}

function kubectl(kubeconfig: string, args: string[]): string {
  const local = join(root, '.cache', 'control-plane', 'bin', 'kubectl');
  const r = spawnSync(existsSync(local) ? local : 'kubectl', ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

function main(): void {
  const i = process.argv.indexOf('--kubeconfig');
  const kubeconfig = i > 0 ? process.argv[i + 1] : process.env.KUBECONFIG;
  if (!kubeconfig) throw new Error('usage: refresh-snapshot.ts --kubeconfig <path>');
  const doc = documentSchema.parse(JSON.parse(kubectl(kubeconfig, ['get', '--raw', OPENAPI_PATH])));
  const server = versionSchema.parse(JSON.parse(kubectl(kubeconfig, ['version', '-o', 'json']))).serverVersion.gitVersion;
  const names = closureOf(doc.components.schemas, SNAPSHOT_ROOTS);
  const snapshot: OpenApiSnapshot = {
    source: {
      document: `kube-apiserver ${server}: GET ${OPENAPI_PATH} (${doc.info.title} ${doc.info.version})`,
      capturedAt: new Date().toISOString().slice(0, 10),
      roots: [...SNAPSHOT_ROOTS],
      refresh: 'npx tsx api/openapi/refresh-snapshot.ts --kubeconfig <a kubeconfig> && npm run crds',
    },
    schemas: Object.fromEntries(names.map((n) => [n, doc.components.schemas[n] as Record<string, unknown>])),
  };
  writeFileSync(SNAPSHOT_PATH, `${JSON.stringify(snapshot, null, 1)}\n`);
  console.log(`wrote ${SNAPSHOT_PATH}: ${names.length} schemas from kube-apiserver ${server}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
