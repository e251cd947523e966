/**
 * KEDA's operator and external metrics server, run out of cluster against the sandbox's kube-apiserver
 * (binaries and CRDs built by infra/local-control-plane/build-keda.sh). The KEDA end-to-end test
 * (test/integration/autoscaler-keda-e2e.test.ts) closes the autoscaler's loop through them: a
 * ScaledObject's Prometheus trigger → the HPA KEDA owns → the Deployment's replicas.
 *
 * What a Helm install does inside a cluster is done here by hand, on loopback:
 * - one CA and one certificate (server and client use) for the adapter ↔ operator gRPC link, which
 *   KEDA secures with mutual TLS, and for the adapter's HTTPS API;
 * - a Service `keda/keda-metrics-apiserver` of type ExternalName (`localhost`, the adapter's port): the
 *   aggregator resolves it to host:port itself, no kube-proxy needed;
 * - the APIService `v1beta1.external.metrics.k8s.io` with the CA as caBundle, so the API server
 *   verifies the adapter's certificate (no insecureSkipTLSVerify). The adapter trusts the API server's
 *   proxy client certificate through the requestheader CA that up.sh gives kube-apiserver.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { isStatus, kubeRequest } from '../kube/raw.js';
import { generateCa } from '../runtime/webhook/certs.js';
import { freePort } from './free-port.js';
import { packageRoot } from '../runtime/package-root.js';

const root = packageRoot(import.meta.url);

/** Where KEDA's cluster-wide objects live, as in its Helm chart. */
export const KEDA_NAMESPACE = 'keda';
export const EXTERNAL_METRICS_APISERVICE = 'v1beta1.external.metrics.k8s.io';
const SERVICE = 'keda-metrics-apiserver';

export interface KedaOptions {
  kubeconfig: string;
  /** Namespaces the operator and the metrics server watch (WATCH_NAMESPACE); default all. */
  watchNamespaces?: string[];
  /** Where build-keda.sh put the binaries and CRDs; default .cache/control-plane/bin. */
  binDir?: string;
  log?: (line: string) => void;
}

export interface RunningKeda {
  /** The last lines of the operator's and the metrics server's logs (for a failing test's message). */
  logTail(lines?: number): string;
  /** Stops both processes and removes the APIService and its Service (a dead APIService breaks discovery). */
  stop(): Promise<void>;
}

/** An object's status conditions (an APIService's, a CRD's). */
const conditionsSchema = z.object({
  status: z.object({ conditions: z.array(z.object({ type: z.string(), status: z.string(), message: z.string().optional() })).optional() }).optional(),
});
const configMapSchema = z.object({ data: z.record(z.string(), z.string()).optional() });

/**
 * Starts KEDA against the cluster of `kubeconfig` and resolves once the API server serves
 * external.metrics.k8s.io through it. Throws with what to do when something it needs is missing.
 */
export async function startKeda(opts: KedaOptions): Promise<RunningKeda> {
  const log = opts.log ?? (() => undefined);
  const bin = opts.binDir ?? process.env.RIPPLE_CONTROL_PLANE_BIN ?? path.join(root, '.cache', 'control-plane', 'bin');
  for (const f of ['keda-operator', 'keda-adapter', 'keda-crds', 'kubectl']) {
    if (!existsSync(path.join(bin, f))) throw new Error(`missing ${path.join(bin, f)}: run infra/local-control-plane/build-keda.sh (scripts/ensure-deps.sh does)`);
  }
  const kc = new KubeConfig();
  kc.loadFromFile(opts.kubeconfig);
  await requireAggregationLayer(kc);

  const kubectl = (...args: string[]) => {
    const r = spawnSync(path.join(bin, 'kubectl'), ['--kubeconfig', opts.kubeconfig, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
  };
  kubectl('apply', '--server-side', '--force-conflicts', '-f', path.join(bin, 'keda-crds'));
  // kubectl wait fails at once on a CRD whose status the API server has not written yet: poll instead.
  for (const crd of ['scaledobjects.keda.sh', 'triggerauthentications.keda.sh']) {
    await waitUntil(`the CRD ${crd} to be Established`, 60_000, [], () => '', async () => {
      const got = conditionsSchema.parse(await kubeRequest(kc, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`));
      return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true;
    });
  }
  await ensureNamespace(kc);
  // A run that died before its stop() leaves an APIService pointing at nothing; replace it.
  await removeRegistration(kc);

  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-keda-'));
  const children: ChildProcess[] = [];
  const logFiles = { operator: path.join(dir, 'operator.log'), adapter: path.join(dir, 'adapter.log') };
  const logTail = (lines = 40) =>
    Object.entries(logFiles)
      .map(([name, file]) => `--- ${name} ---\n${existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : '(no log)'}`)
      .join('\n');
  const stop = async () => {
    await removeRegistration(kc).catch((err: unknown) => log(`keda: removing the APIService failed: ${String(err)}`));
    await Promise.all(children.map((c) => stopChild(c)));
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const ca = await generateCa(1, 'ripple-keda-ca');
    const certDir = path.join(dir, 'certs');
    const leaf = issueLeaf(ca, certDir, ['127.0.0.1', 'localhost', `keda-operator.${KEDA_NAMESPACE}.svc`, `${SERVICE}.${KEDA_NAMESPACE}.svc`]);

    const [grpcPort, probePort, operatorMetricsPort, securePort, adapterMetricsPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      KUBECONFIG: opts.kubeconfig,
      WATCH_NAMESPACE: (opts.watchNamespaces ?? []).join(','),
      // Out of cluster there is no service-account namespace file to read these from.
      POD_NAMESPACE: KEDA_NAMESPACE,
      KEDA_CLUSTER_OBJECT_NAMESPACE: KEDA_NAMESPACE,
    };
    log(`keda: starting the operator (gRPC metrics service on 127.0.0.1:${grpcPort})`);
    children.push(
      launch(path.join(bin, 'keda-operator'), [
        `--kubeconfig=${opts.kubeconfig}`,
        '--leader-elect=false',
        `--metrics-bind-address=127.0.0.1:${operatorMetricsPort}`,
        `--health-probe-bind-address=127.0.0.1:${probePort}`,
        `--metrics-service-bind-address=127.0.0.1:${grpcPort}`,
        `--cert-dir=${certDir}`,
        `--ca-dir=${certDir}`,
        '--zap-log-level=info',
      ], env, logFiles.operator),
    );
    await waitUntil('the KEDA operator to be ready', 120_000, children, logTail, async () => (await fetch(`http://127.0.0.1:${probePort}/readyz`)).ok);

    log(`keda: starting the metrics server on https://127.0.0.1:${securePort}`);
    children.push(
      launch(path.join(bin, 'keda-adapter'), [
        `--kubeconfig=${opts.kubeconfig}`,
        `--lister-kubeconfig=${opts.kubeconfig}`,
        `--authentication-kubeconfig=${opts.kubeconfig}`,
        `--authorization-kubeconfig=${opts.kubeconfig}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${securePort}`,
        `--tls-cert-file=${leaf.cert}`,
        `--tls-private-key-file=${leaf.key}`,
        // The gRPC client reads ca.crt, tls.crt and tls.key from here.
        `--cert-dir=${certDir}`,
        `--metrics-service-address=127.0.0.1:${grpcPort}`,
        `--port=${adapterMetricsPort}`,
        '--zap-log-level=info',
      ], env, logFiles.adapter),
    );
    await waitUntil('the KEDA metrics server to be healthy', 120_000, children, logTail, async () => (await httpsStatus(securePort, '/readyz', ca.certPem)) === 200);

    await kubeRequest(kc, `/api/v1/namespaces/${KEDA_NAMESPACE}/services`, {
      method: 'POST',
      body: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: SERVICE, namespace: KEDA_NAMESPACE },
        spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port: securePort, protocol: 'TCP' }] },
      },
    });
    await kubeRequest(kc, '/apis/apiregistration.k8s.io/v1/apiservices', {
      method: 'POST',
      body: {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: EXTERNAL_METRICS_APISERVICE },
        spec: {
          group: 'external.metrics.k8s.io',
          version: 'v1beta1',
          service: { name: SERVICE, namespace: KEDA_NAMESPACE, port: securePort },
          caBundle: Buffer.from(ca.certPem).toString('base64'),
          groupPriorityMinimum: 100,
          versionPriority: 100,
        },
      },
    });
    let lastMessage = '';
    await waitUntil('the APIService to become Available', 90_000, children, () => `${lastMessage}\n${logTail()}`, async () => {
      const svc = conditionsSchema.parse(await kubeRequest(kc, `/apis/apiregistration.k8s.io/v1/apiservices/${EXTERNAL_METRICS_APISERVICE}`));
      const available = svc.status?.conditions?.find((c) => c.type === 'Available');
      lastMessage = `Available=${available?.status ?? '?'}: ${available?.message ?? ''}`;
      return available?.status === 'True';
    });
    log('keda: external.metrics.k8s.io is served');
    return { logTail, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The adapter authenticates the API server's proxied requests by its client certificate, checked against
 * the requestheader CA kube-apiserver publishes. A sandbox started before up.sh passed those flags has
 * none: every proxied request would be anonymous and refused.
 */
async function requireAggregationLayer(kc: KubeConfig): Promise<void> {
  // Without any client CA flag kube-apiserver does not publish the ConfigMap at all.
  const cm = configMapSchema.parse(
    await kubeRequest(kc, '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication').catch((err: unknown) => {
      if (isStatus(err, 404)) return {};
      throw err;
    }),
  );
  if (!cm.data?.['requestheader-client-ca-file']) {
    throw new Error(
      'the sandbox kube-apiserver runs without the aggregation layer (no --requestheader-client-ca-file): it was started before ' +
        'infra/local-control-plane/up.sh enabled it; restart the sandbox (infra/local-control-plane/down.sh, then up.sh)',
    );
  }
}

async function ensureNamespace(kc: KubeConfig): Promise<void> {
  try {
    await kubeRequest(kc, '/api/v1/namespaces', { method: 'POST', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KEDA_NAMESPACE } } });
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
  }
}

async function removeRegistration(kc: KubeConfig): Promise<void> {
  for (const p of [`/apis/apiregistration.k8s.io/v1/apiservices/${EXTERNAL_METRICS_APISERVICE}`, `/api/v1/namespaces/${KEDA_NAMESPACE}/services/${SERVICE}`]) {
    try {
      await kubeRequest(kc, p, { method: 'DELETE' });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }
}

/**
 * One certificate for every KEDA endpoint: the operator's gRPC server and the adapter's gRPC client
 * (KEDA verifies both ends against ca.crt) and the adapter's HTTPS API. The files are the names KEDA
 * reads from its --cert-dir.
 */
function issueLeaf(ca: { certPem: string; keyPem: string }, certDir: string, hosts: string[]): { cert: string; key: string } {
  mkdirSync(certDir, { recursive: true });
  const caKey = path.join(certDir, 'ca.key');
  writeFileSync(path.join(certDir, 'ca.crt'), ca.certPem);
  writeFileSync(caKey, ca.keyPem, { mode: 0o600 });
  const san = hosts.map((h) => (/^[\d.]+$/.test(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
  writeFileSync(path.join(certDir, 'ext.cnf'), `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n`);
  const openssl = (args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: certDir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed (is openssl installed?): ${r.stderr}`);
  };
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', '/CN=keda']);
  openssl(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'tls.crt', '-days', '1', '-extfile', 'ext.cnf']);
  // The CA key is not needed any more: nothing else is signed with it.
  rmSync(caKey);
  return { cert: path.join(certDir, 'tls.crt'), key: path.join(certDir, 'tls.key') };
}

function launch(binary: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): ChildProcess {
  const out = createWriteStream(logFile);
  const child = spawn(binary, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(killer);
}

async function waitUntil(what: string, timeoutMs: number, children: ChildProcess[], detail: () => string, ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = children.find((c) => c.exitCode !== null);
    if (dead) throw new Error(`waiting for ${what}: ${dead.spawnfile} exited with ${dead.exitCode}\n${detail()}`);
    if (await ok().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${detail()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The HTTP status of a GET on the adapter's HTTPS port, verifying its certificate against the CA. */
function httpsStatus(port: number, urlPath: string, caPem: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, ca: caPem, servername: 'localhost', timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}
