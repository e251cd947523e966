import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { startCli, stopCli, type RunningCli } from '../fixtures/http-cli.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Issue 32, "Functions without a fork": a function of one's own, outside Ripple's tree, built against Ripple's
// published package shape (compiled JS and declarations, reached through package.json `exports`) and run by
// the `ripple` command beside the built-in functions — as a queue worker behind the watcher, and as an HTTP
// function behind the dispatcher — on the real sandbox. Then the chart's values for such a function.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const example = path.join(root, 'examples', 'configmap-stamp');
// Git-ignored; kept between runs so the package build is incremental.
const work = path.join(root, '.cache', 'custom-function-test');
const pkg = path.join(work, 'ripple');
const app = path.join(work, 'configmap-stamp');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const helmBin = path.join(root, '.cache', 'control-plane', 'bin', 'helm');
/** The package's `ripple` command (`npx ripple`): without the sources beside it, it runs the compiled dist/cli/ripple.js. */
const CLI = path.join(pkg, 'bin', 'ripple.js');
const TOKEN = 'custom-function-token-0123456789';
const STAMP = 'example.ripple.dev/stamp';

const packageJson = z.object({ exports: z.record(z.string(), z.unknown()), types: z.string(), files: z.array(z.string()), private: z.boolean().optional() });

function run(cmd: string, args: string[], cwd = root): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${path.basename(cmd)} ${args.join(' ')} (in ${path.relative(root, cwd) || '.'}) failed (${r.status}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/**
 * Ripple as `npm install ripple` leaves it: package.json, bin/ and the compiled dist/ of `npm run build`
 * (tsconfig.build.json), with its dependencies beside it (here the checkout's node_modules).
 */
function installRipplePackage(): void {
  mkdirSync(pkg, { recursive: true });
  run(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', path.join(pkg, 'dist'), '--incremental', '--tsBuildInfoFile', path.join(work, 'ripple.tsbuildinfo')]);
  cpSync(path.join(root, 'package.json'), path.join(pkg, 'package.json'));
  rmSync(path.join(pkg, 'bin'), { recursive: true, force: true });
  cpSync(path.join(root, 'bin'), path.join(pkg, 'bin'), { recursive: true });
  if (!existsSync(path.join(pkg, 'node_modules'))) symlinkSync(path.join(root, 'node_modules'), path.join(pkg, 'node_modules'));
}

/** The example as its author has it, with `ripple` linked the way npm installs its `file:` dependency, then built. */
function buildExample(): void {
  rmSync(app, { recursive: true, force: true });
  mkdirSync(path.join(app, 'node_modules'), { recursive: true });
  for (const f of ['package.json', 'tsconfig.json', 'src']) cpSync(path.join(example, f), path.join(app, f), { recursive: true });
  symlinkSync(pkg, path.join(app, 'node_modules', 'ripple'));
  run(process.execPath, [tsc, '-p', 'tsconfig.json'], app);
}

let sb: TestSandbox;
const clis: RunningCli[] = [];
let moduleArgs: string[];

/** Every process of the installation: one Redis prefix, confined to the test's namespace, its Lease there too. */
const env = (extra: Record<string, string> = {}) => ({ RIPPLE_PREFIX: sb.prefix, RIPPLE_NAMESPACE: sb.namespace, RIPPLE_WATCH_NAMESPACE: sb.namespace, ...extra });

async function cli(args: string[], extra: Record<string, string> = {}): Promise<RunningCli> {
  const c = await startCli(args, env(extra), { capture: true, entry: CLI });
  clis.push(c);
  return c;
}

async function stamped(name: string): Promise<string | undefined> {
  const cm = await sb.core.readNamespacedConfigMap({ namespace: sb.namespace, name });
  return cm.metadata?.annotations?.[STAMP];
}

async function stampedEvents(name: string): Promise<string[]> {
  const events = await sb.core.listNamespacedEvent({ namespace: sb.namespace, fieldSelector: `involvedObject.name=${name},reason=Stamped` });
  return events.items.map((e) => e.message ?? '');
}

beforeAll(async () => {
  sb = await openSandbox('customfn');
  installRipplePackage();
  buildExample();
  moduleArgs = ['--functions-module', path.join(app, 'dist', 'index.js'), '--kubeconfig', inject('kubeconfig'), '--redis-url', sb.redisUrl];
}, 300_000);
afterEach(async () => {
  for (const c of clis.splice(0).reverse()) await stopCli(c, 'SIGKILL');
});
afterAll(async () => {
  await sb.cleanup();
});

describe('a function of your own, outside Ripple’s tree', () => {
  it('the package publishes its API: exports and types point at the compiled build, which holds JS and declarations', () => {
    const manifest = packageJson.parse(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')));
    expect(manifest.private).toBeUndefined();
    expect(manifest.types).toBe('./dist/sdk/index.d.ts');
    expect(manifest.exports['.']).toMatchObject({ types: './dist/sdk/index.d.ts', default: './dist/sdk/index.js' });
    expect(manifest.files).toEqual(expect.arrayContaining(['dist/', 'bin/'])); // dist/ is git-ignored: only `files` publishes it
    expect(existsSync(path.join(pkg, 'dist', 'sdk', 'index.js'))).toBe(true);
    expect(existsSync(path.join(pkg, 'dist', 'sdk', 'index.d.ts'))).toBe(true);
    // The example's build imported nothing but the package: its output names `ripple`, never a path into it.
    const built = readFileSync(path.join(app, 'dist', 'index.js'), 'utf8');
    expect(built).toMatch(/from 'ripple'/);
    expect(built).not.toMatch(/from '\.\.\//);
  });

  describe('behind one watcher that loads the module', () => {
    let watcher: RunningCli;
    beforeAll(async () => {
      watcher = await startCli(['watcher', '--ops-port', '0', ...moduleArgs], env(), { capture: true, entry: CLI });
    });
    afterAll(async () => {
      await stopCli(watcher, 'SIGKILL');
    });

    it('runs as a worker: `ripple worker` loads the module beside the built-in functions and stamps a labelled ConfigMap, again when its data changes', async () => {
      const worker = await cli(['worker', '--functions', 'configmap-stamp,emit-events', '--ops-port', '0', ...moduleArgs]);
      await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'w', labels: { [STAMP]: 'true' } }, data: { a: '1' } } });
      const first = await waitFor('the worker to stamp ConfigMap w', 30_000, () => stamped('w'));
      expect(first).toMatch(/^sha256:[0-9a-f]{16}$/);
      await waitFor('the Stamped Event on w', 30_000, async () => (await stampedEvents('w')).includes(`data stamped ${first}`));

      const cm = await sb.core.readNamespacedConfigMap({ namespace: sb.namespace, name: 'w' });
      await sb.core.replaceNamespacedConfigMap({ namespace: sb.namespace, name: 'w', body: { ...cm, data: { a: '2' } } });
      const second = await waitFor('the stamp to follow the new data', 30_000, async () => {
        const s = await stamped('w');
        return s !== first ? s : undefined;
      });
      expect(second).toMatch(/^sha256:/);
      // The kernel's own metrics, labelled with its name: it ran in that worker process.
      const metrics = await (await fetch(`http://127.0.0.1:${worker.opsPort}/metrics`)).text();
      expect(metrics).toMatch(/controller_runtime_reconcile_total\{[^}]*controller="configmap-stamp"[^}]*result="success"[^}]*\} [1-9]/);
    });

    it('runs as an HTTP function: `ripple serve` runs it, `ripple worker --dispatch` sends it the jobs the watcher enqueues', async () => {
      const fn = await cli(['serve', '--function', 'configmap-stamp', ...moduleArgs], { PORT: '0', RIPPLE_SERVE_HOST: '127.0.0.1', RIPPLE_FUNCTION_TOKEN: TOKEN });
      await cli(['worker', '--dispatch', `configmap-stamp=http://127.0.0.1:${fn.port}/`, '--functions', 'emit-events', '--ops-port', '0', ...moduleArgs], { RIPPLE_FUNCTION_TOKEN: TOKEN });
      await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name: 'h', labels: { [STAMP]: 'true' } }, data: { b: '1' } } });
      const stamp = await waitFor('the HTTP function to stamp ConfigMap h', 30_000, () => stamped('h'));
      await waitFor('the Stamped Event on h', 30_000, async () => (await stampedEvents('h')).includes(`data stamped ${stamp}`));
      const metrics = await (await fetch(`http://127.0.0.1:${fn.port}/metrics`)).text();
      expect(metrics).toMatch(/ripple_http_function_requests_total\{function="configmap-stamp",status="success"\} [1-9]/);
    });
  });

  it('a module that exports a wrong definition is refused at start, naming the module and what to fix', async () => {
    const bad = path.join(work, 'bad-module.mjs');
    writeFileSync(bad, "export function definitions() { return [{ name: 'Bad_Name', triggers: [], reconcile: 'no' }]; }\n");
    const started = startCli(['worker', '--functions-module', bad, '--kubeconfig', inject('kubeconfig'), '--redis-url', sb.redisUrl], { RIPPLE_PREFIX: sb.prefix }, { capture: true, entry: CLI });
    await expect(started).rejects.toThrow(new RegExp(`function module ${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: function "Bad_Name": name: function names are lowercase.*; function "Bad_Name": reconcile: reconcile must be a function`));
  });
});

describe('the chart runs extra functions', () => {
  interface K8sObject {
    kind: string;
    metadata: { name: string };
    rules?: Array<{ apiGroups?: string[]; resources?: string[]; verbs?: string[] }>;
    data?: Record<string, string>;
    spec?: { replicas?: number; template?: { spec?: { serviceAccountName?: string; containers?: Array<{ args?: string[] }> } } };
  }
  const template = (args: string[]) =>
    parseAllDocuments(run(helmBin, ['template', 'ripple', path.join(root, 'charts', 'ripple'), '--namespace', 'ripple-system', '-f', path.join(example, 'values.yaml'), ...args]))
      .map((d) => d.toJSON() as K8sObject | null)
      .filter((o): o is K8sObject => o !== null);
  const grants = (o: K8sObject | undefined, resource: string, verb: string) => (o?.rules ?? []).some((r) => r.resources?.includes(resource) && r.verbs?.includes(verb));

  it('extraFunctions: the watcher may watch what its triggers name, the function has its own identity and rules, every process loads the module', () => {
    run(helmBin, ['lint', '--strict', path.join(root, 'charts', 'ripple'), '-f', path.join(example, 'values.yaml'), '--set', 'mode=scaled']);
    const objects = template(['--set', 'mode=scaled']);
    const byName = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
    expect(grants(byName('ClusterRole', 'ripple-watcher'), 'configmaps', 'watch')).toBe(true);
    const own = byName('ClusterRole', 'ripple-worker-configmap-stamp');
    expect(grants(own, 'configmaps', 'patch')).toBe(true);
    expect(grants(own, 'configmaps', 'list')).toBe(true); // its resync lists its primary
    expect(grants(byName('ClusterRole', 'ripple-ops'), 'configmaps', 'list')).toBe(true); // manual resync
    const deployment = byName('Deployment', 'ripple-worker-configmap-stamp');
    expect(deployment?.spec?.template?.spec?.serviceAccountName).toBe('ripple-worker-configmap-stamp');
    expect(deployment?.spec?.template?.spec?.containers?.[0]?.args).toEqual(['worker', '--functions', 'configmap-stamp']);
    expect(byName('ConfigMap', 'ripple-config')?.data?.RIPPLE_FUNCTIONS_MODULES).toBe('/app/extra/configmap-stamp/index.js');

    const serverless = template(['--set', 'mode=serverless', '--set', `functionToken.value=${TOKEN}`]);
    const dispatcher = serverless.find((o) => o.kind === 'Deployment' && o.metadata.name === 'ripple-dispatcher');
    expect(dispatcher?.spec?.template?.spec?.containers?.[0]?.args).toContain('configmap-stamp=http://ripple-configmap-stamp.ripple-system.svc.cluster.local');
    expect(grants(serverless.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'ripple-dispatcher'), 'configmaps', 'list')).toBe(true);
  });

  it('what the example values render, scaled and serverless, passes a strict server-side dry run', () => {
    const kubectl = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
    for (const mode of [['--set', 'mode=scaled'], ['--set', 'mode=serverless', '--set', `functionToken.value=${TOKEN}`]]) {
      const rendered = run(helmBin, ['template', 'ripple', path.join(root, 'charts', 'ripple'), '--namespace', sb.namespace, '-f', path.join(example, 'values.yaml'), ...mode]);
      // Knative's Service kind is not served by the sandbox, and other files install and remove minimal Knative
      // CRDs while this runs (kubectl's discovery then answers NotFound or "no matches" by timing): those
      // documents are set aside and counted, everything else must be accepted.
      const docs = parseAllDocuments(rendered).filter((d) => d.toJSON() !== null);
      const knative = docs.filter((d) => String(d.get('apiVersion')).startsWith('serving.knative.dev/'));
      expect(knative.length, mode.join(' ')).toBe(mode.includes('mode=serverless') ? 5 : 0);
      const input = docs.filter((d) => !knative.includes(d)).map((d) => d.toString()).join('---\n');
      const r = spawnSync(kubectl, ['--kubeconfig', inject('kubeconfig'), 'apply', '--server-side', '--dry-run=server', '--validate=strict', '--force-conflicts', '--field-manager=ripple-custom-function-test', '-f', '-'], { input, encoding: 'utf8' });
      expect(r.stderr.trim(), mode.join(' ')).toBe('');
      expect(r.stdout).toMatch(/clusterrole.rbac.authorization.k8s.io\/ripple-worker-configmap-stamp serverside-applied \(server dry run\)/);
    }
  });

  it('workers.perFunction takes an extra function’s name, honours replicas: 0, and refuses a name that is no function', () => {
    const replicasOf = (args: string[]) =>
      Object.fromEntries(
        template(['--set', 'mode=scaled', ...args])
          .filter((o) => o.kind === 'Deployment' && o.metadata.name.startsWith('ripple-worker-'))
          .map((o) => [o.metadata.name.replace('ripple-worker-', ''), o.spec?.replicas]),
      );
    // Only the workers a release needs (the lean shape real-node-custom-function.test.ts installs), and 0 for one
    // function under a chart-wide 1 (merge took that 0 for unset before).
    expect(replicasOf(['--set', 'workers.replicas=0', '--set', 'workers.perFunction.configmap-stamp.replicas=2', '--set', 'workers.perFunction.emit-events.replicas=1'])).toEqual({
      'reconcile-modelserving': 0, 'reconcile-autoscaler': 0, 'ops-lifecycle': 0, 'emit-events': 1, 'configmap-stamp': 2,
    });
    expect(replicasOf(['--set', 'workers.replicas=1', '--set', 'workers.perFunction.ops-lifecycle.replicas=0'])['ops-lifecycle']).toBe(0);
    const r = spawnSync(helmBin, ['template', 'ripple', path.join(root, 'charts', 'ripple'), '-f', path.join(example, 'values.yaml'), '--set', 'mode=scaled', '--set', 'workers.perFunction.configmap-stmp.replicas=2'], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/workers\.perFunction\.configmap-stmp: no such function; give one of reconcile-modelserving, reconcile-autoscaler, ops-lifecycle, emit-events, configmap-stamp/);
  });

  it('an extra function named like a built-in one is refused with a message that says so', () => {
    const r = spawnSync(helmBin, ['template', 'ripple', path.join(root, 'charts', 'ripple'), '--set', 'extraFunctions[0].name=emit-events', '--set', 'extraFunctions[0].module=/m.js'], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/extraFunctions: emit-events is one of Ripple's own functions/);
  });
});
