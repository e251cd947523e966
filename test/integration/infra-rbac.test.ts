import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { allFunctions } from '../../functions/index.js';
import { ControlledPodCache } from '../../functions/ops-lifecycle/pod-access/pod-cache.js';
import { ChildrenCache } from '../../functions/reconcile-modelserving/children-cache.js';
import { KubeApiError, kubeRequest } from '../../kube/raw.js';
import { collectionPath, type ResourceRef } from '../../kube/resources.js';
import { createLogger } from '../../base/log.js';
import { LeaderElector } from '../../watcher/leader.js';
import { Watcher } from '../../watcher/watcher.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Least privilege, for real: every identity in infra/deploy/rbac is applied to the sandbox (moved into
// this test's namespace, cluster-wide names prefixed so nothing collides), a token is minted for each
// ServiceAccount with the TokenRequest API, and each token is used for real requests: what the
// process does must succeed, and writes it has no business making must be refused with 403.
// A request for an object that does not exist answers 404 when it is allowed and 403 when it is not,
// so many checks need no fixtures.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const kubectlBin = existsSync(path.join(root, '.cache/control-plane/bin/kubectl')) ? path.join(root, '.cache/control-plane/bin/kubectl') : 'kubectl';
const IDENTITIES = ['watcher', 'ops', 'dispatcher', 'reconcile-modelserving', 'reconcile-autoscaler', 'ops-lifecycle', 'emit-events'] as const;
type Identity = (typeof IDENTITIES)[number];
const log = createLogger('rbac-test', process.env.LOG_LEVEL ?? 'warn');

let sb: TestSandbox;
let prefix: string;
let clusterScoped: Array<{ kind: string; name: string }> = [];
const tokens = new Map<Identity, KubeConfig>();

const objectSchema = z.object({ kind: z.string(), metadata: z.object({ name: z.string(), namespace: z.string().optional() }).passthrough() }).passthrough();

function serviceAccount(id: Identity): string {
  const base = id === 'watcher' || id === 'ops' || id === 'dispatcher' ? `ripple-${id}` : `ripple-worker-${id}`;
  return `${prefix}${base}`;
}

function kubeconfigWithToken(admin: KubeConfig, token: string): KubeConfig {
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'sandbox', server: cluster.server, skipTLSVerify: cluster.skipTLSVerify, caData: cluster.caData, caFile: cluster.caFile }],
    users: [{ name: 'sa', token }],
    contexts: [{ name: 'sa', cluster: 'sandbox', user: 'sa' }],
    currentContext: 'sa',
  });
  return kc;
}

/**
 * Applies kustomize components re-homed into this test's namespace (cluster-wide names prefixed), as an overlay
 * would; answers the cluster-scoped objects made, for the clean-up.
 */
function applyComponents(dirs: string[]): Array<{ kind: string; name: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ripple-rbac-'));
  try {
    const components = dirs.map((d) => `  - ${path.relative(dir, d)}`).join('\n');
    writeFileSync(path.join(dir, 'kustomization.yaml'), `namespace: ${ns()}\nnamePrefix: ${prefix}\ncomponents:\n${components}\n`);
    const built = spawnSync(kubectlBin, ['kustomize', dir], { encoding: 'utf8' });
    if (built.status !== 0) throw new Error(built.stderr);
    const applied = spawnSync(kubectlBin, ['--kubeconfig', inject('kubeconfig'), 'apply', '-f', '-'], { input: built.stdout, encoding: 'utf8' });
    if (applied.status !== 0) throw new Error(applied.stderr);
    return parseAllDocuments(built.stdout)
      .map((d) => objectSchema.parse(d.toJS()))
      .filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')
      .map((o) => ({ kind: o.kind, name: o.metadata.name }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The HTTP status of a request with this identity's token (2xx/404 = allowed, 403 = refused). */
async function status(id: Identity, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', urlPath: string, body?: unknown, contentType?: string): Promise<number> {
  try {
    await kubeRequest(tokens.get(id)!, urlPath, { method, body, contentType });
    return 200;
  } catch (err) {
    if (err instanceof KubeApiError) return err.code;
    throw err;
  }
}

const allowed = async (id: Identity, ...args: Parameters<typeof status> extends [Identity, ...infer R] ? R : never) => {
  const code = await status(id, ...args);
  expect([200, 201, 404], `${id} ${args[0]} ${args[1]} answered ${code}`).toContain(code);
};
const refused = async (id: Identity, ...args: Parameters<typeof status> extends [Identity, ...infer R] ? R : never) => {
  expect(await status(id, ...args), `${id} ${args[0]} ${args[1]}`).toBe(403);
};

/** SubjectAccessReview, asked by the admin: may this identity do `verb` on the resource? */
async function may(id: Identity, verb: string, resource: { group: string; resource: string; subresource?: string; name?: string }, namespace?: string): Promise<boolean> {
  const review = await kubeRequest(sb.kc, '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    method: 'POST',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: `system:serviceaccount:${sb.namespace}:${serviceAccount(id)}`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${sb.namespace}`, 'system:authenticated'],
        resourceAttributes: { verb, group: resource.group, resource: resource.resource, subresource: resource.subresource, name: resource.name, namespace },
      },
    },
  });
  return z.object({ status: z.object({ allowed: z.boolean() }) }).parse(review).status.allowed;
}

const ns = () => sb.namespace;
const pods = () => collectionPath({ group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true }, ns());
const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } });

beforeAll(async () => {
  sb = await openSandbox('rbac');
  prefix = `${sb.namespace}-`;
  clusterScoped = applyComponents(IDENTITIES.map((id) => path.join(root, 'infra', 'deploy', 'rbac', id)));
  const core = sb.kc.makeApiClient(CoreV1Api);
  for (const id of IDENTITIES) {
    const tr = await core.createNamespacedServiceAccountToken({ name: serviceAccount(id), namespace: ns(), body: { spec: { expirationSeconds: 900, audiences: [] } } });
    const token = tr.status?.token;
    if (!token) throw new Error(`no token issued for ${serviceAccount(id)}`);
    tokens.set(id, kubeconfigWithToken(sb.kc, token));
  }
});
afterAll(async () => {
  for (const o of clusterScoped) spawnSync(kubectlBin, ['--kubeconfig', inject('kubeconfig'), 'delete', o.kind.toLowerCase(), o.name, '--ignore-not-found', '--wait=false']);
  await sb.cleanup();
});

describe('least-privilege RBAC, with real ServiceAccount tokens', () => {
  it('the tokens authenticate as their ServiceAccounts', async () => {
    for (const id of IDENTITIES) {
      const review = await kubeRequest(tokens.get(id)!, '/apis/authentication.k8s.io/v1/selfsubjectreviews', { method: 'POST', body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
      expect(JSON.stringify(review)).toContain(`system:serviceaccount:${ns()}:${serviceAccount(id)}`);
    }
  });

  it('watcher: runs the real watcher over every function\'s triggers and wins the Lease; may not write anything else', async () => {
    const kc = tokens.get('watcher')!;
    const before = process.env.POD_NAMESPACE;
    process.env.POD_NAMESPACE = ns(); // the autoscaler's ConfigMaps are in the controller namespace
    let functions;
    try {
      functions = allFunctions();
    } finally {
      if (before === undefined) delete process.env.POD_NAMESPACE;
      else process.env.POD_NAMESPACE = before;
    }
    // Cluster-wide, as in production: every trigger's list and watch must work with this token alone.
    const watcher = new Watcher({ kc, functions, enqueue: async () => undefined, isLeader: () => false, log });
    watcher.start();
    try {
      await watcher.waitForSync(60_000);
      expect(watcher.health().every((h) => h.synced)).toBe(true);
    } finally {
      await watcher.stop();
    }
    const elector = new LeaderElector({ kc, namespace: ns(), name: 'ripple-watcher', identity: 'rbac-test', log, retryPeriodMs: 200, leaseDurationMs: 3000, renewDeadlineMs: 2000 });
    elector.start();
    try {
      await waitFor('the watcher to lead', 15_000, async () => elector.isLeader());
    } finally {
      await elector.stop();
    }
    await refused('watcher', 'GET', `/apis/coordination.k8s.io/v1/namespaces/${ns()}/leases/someone-elses-lease`);
    await refused('watcher', 'POST', pods(), pod('by-watcher'));
    await refused('watcher', 'GET', `${pods()}/anything`); // lists and watches, never reads one by name
    await refused('watcher', 'GET', `/api/v1/namespaces/${ns()}/secrets`);
    await refused('watcher', 'GET', '/api/v1/configmaps'); // ConfigMaps only in its own namespace
    await refused('watcher', 'DELETE', `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${ns()}/modelservings/x`);
  });

  it('reconcile-modelserving: creates and deletes pods, Services and ControllerRevisions, patches status; nothing more', async () => {
    const id = 'reconcile-modelserving';
    await allowed(id, 'POST', pods(), pod('ms-0-prefill-0-0'));
    await allowed(id, 'PATCH', `${pods()}/ms-0-prefill-0-0`, { metadata: { labels: { touched: 'yes' } } }, 'application/merge-patch+json');
    await allowed(id, 'DELETE', `${pods()}/ms-0-prefill-0-0`);
    await allowed(id, 'POST', `/api/v1/namespaces/${ns()}/services`, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ms-0-prefill' }, spec: { clusterIP: 'None', selector: { a: 'b' } } });
    await allowed(id, 'DELETE', `/api/v1/namespaces/${ns()}/services/ms-0-prefill`);
    await allowed(id, 'POST', `/apis/apps/v1/namespaces/${ns()}/controllerrevisions`, { apiVersion: 'apps/v1', kind: 'ControllerRevision', metadata: { name: 'ms-abc' }, revision: 1, data: {} });
    await allowed(id, 'DELETE', `/apis/apps/v1/namespaces/${ns()}/controllerrevisions/ms-abc`);
    await allowed(id, 'GET', '/apis/workload.serving.volcano.sh/v1alpha1/modelservings');
    await allowed(id, 'PATCH', `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${ns()}/modelservings/absent/status`, { status: {} }, 'application/merge-patch+json');
    expect(await may(id, 'update', { group: 'workload.serving.volcano.sh', resource: 'modelservings', subresource: 'finalizers' }, ns())).toBe(true);
    expect(await may(id, 'create', { group: 'scheduling.volcano.sh', resource: 'podgroups' }, ns())).toBe(true);
    expect(await may(id, 'get', { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', name: 'podgroups.scheduling.volcano.sh' })).toBe(true);
    expect(await may(id, 'get', { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', name: 'modelservings.workload.serving.volcano.sh' })).toBe(false);

    // The PodOpsLifecycle opt-in's deletion finalizer (reconcile-modelserving/lifecycle.ts) is a metadata patch.
    await allowed(id, 'PATCH', `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${ns()}/modelservings/absent`, { metadata: { finalizers: [] } }, 'application/merge-patch+json');
    await refused(id, 'DELETE', `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${ns()}/modelservings/absent`);
    await refused(id, 'POST', `/apis/apps/v1/namespaces/${ns()}/deployments`, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' } });
    await refused(id, 'POST', `/api/v1/namespaces/${ns()}/events`, { apiVersion: 'v1', kind: 'Event', metadata: { name: 'x' } }); // events go through emit-events
    await refused(id, 'GET', `/api/v1/namespaces/${ns()}/secrets/any`);

    // The children cache (children-cache.ts) list-watches pods, Services and ControllerRevisions with this
    // token: without watch it is never ready and every reconcile falls back to three LISTs.
    const cache = new ChildrenCache(tokens.get(id)!, ns(), log, () => undefined);
    try {
      await waitFor('the children cache to list and watch with the worker token', 30_000, async () => cache.ready());
    } finally {
      await cache.stop();
    }
  });

  it('reconcile-autoscaler: reads Deployments, pods, nodes and its ConfigMaps, patches VA status — and cannot create pods or scale anything', async () => {
    const id = 'reconcile-autoscaler';
    await allowed(id, 'GET', '/apis/apps/v1/deployments');
    await allowed(id, 'GET', `/apis/apps/v1/namespaces/${ns()}/deployments/absent`);
    await allowed(id, 'GET', '/api/v1/pods');
    await allowed(id, 'GET', '/api/v1/nodes');
    await allowed(id, 'GET', `/api/v1/namespaces/${ns()}/configmaps/saturation-scaling-config`);
    await allowed(id, 'GET', '/apis/llmd.ai/v1alpha1/variantautoscalings');
    await allowed(id, 'PATCH', `/apis/llmd.ai/v1alpha1/namespaces/${ns()}/variantautoscalings/absent/status`, { status: {} }, 'application/merge-patch+json');

    await refused(id, 'POST', pods(), pod('by-autoscaler'));
    await refused(id, 'PATCH', `/apis/apps/v1/namespaces/${ns()}/deployments/absent`, { spec: { replicas: 3 } }, 'application/merge-patch+json');
    await refused(id, 'PUT', `/apis/apps/v1/namespaces/${ns()}/deployments/absent/scale`, { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'absent' }, spec: { replicas: 3 } });
    await refused(id, 'GET', '/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt'); // its ConfigMaps only
    await refused(id, 'PATCH', `/apis/llmd.ai/v1alpha1/namespaces/${ns()}/variantautoscalings/absent`, { spec: {} }, 'application/merge-patch+json');
    await refused(id, 'GET', `/api/v1/namespaces/${ns()}/secrets`);
  });

  it('ops-lifecycle: reads and patches pods and their status, reads Services — and cannot create or delete pods', async () => {
    const id = 'ops-lifecycle';
    await sb.core.createNamespacedPod({ namespace: ns(), body: pod('lifecycle-target') });
    await allowed(id, 'GET', `${pods()}/lifecycle-target`);
    await allowed(id, 'PATCH', `${pods()}/lifecycle-target`, { metadata: { labels: { 'operating.podopslifecycle.kusionstack.io/x': '1' }, finalizers: ['prot.podopslifecycle.kusionstack.io/x'] } }, 'application/merge-patch+json');
    await allowed(id, 'PATCH', `${pods()}/lifecycle-target/status`, { status: { conditions: [{ type: 'pod.kusionstack.io/service-ready', status: 'False' }] } }, 'application/strategic-merge-patch+json');
    await allowed(id, 'GET', `/api/v1/namespaces/${ns()}/services/absent`);
    await allowed(id, 'GET', `/apis/discovery.k8s.io/v1/namespaces/${ns()}/endpointslices`);
    await refused(id, 'POST', pods(), pod('by-lifecycle'));
    await refused(id, 'DELETE', `${pods()}/lifecycle-target`);
    await refused(id, 'PATCH', `/api/v1/namespaces/${ns()}/services/absent`, { spec: {} }, 'application/merge-patch+json');
    await sb.core.patchNamespacedPod({ namespace: ns(), name: 'lifecycle-target', body: [{ op: 'remove', path: '/metadata/finalizers' }] }).catch(() => undefined);

    // The controlled-pod cache (pod-access/pod-cache.ts) list-watches with this token: without watch it never
    // streams, and every resync and event-woken reconcile reads its Pod live.
    const cache = new ControlledPodCache(tokens.get(id)!, ns(), log, () => undefined);
    try {
      await waitFor('the controlled-pod cache to list and watch with the worker token', 30_000, async () => cache.ready());
    } finally {
      await cache.stop();
    }
  });

  it('ops-lifecycle with GraceDelete: the grace-delete component, and only it, lets the function delete pods', async () => {
    const id = 'ops-lifecycle';
    await sb.core.createNamespacedPod({ namespace: ns(), body: pod('grace-target') });
    await refused(id, 'DELETE', `${pods()}/grace-target`);
    // Beside the function's identity, as an overlay adds it (the binding's subject is that ServiceAccount).
    const identity = path.join(root, 'infra', 'deploy', 'rbac', id);
    clusterScoped.push(...applyComponents([identity, path.join(identity, 'grace-delete')]));
    await waitFor('the grace-delete binding to take effect', 10_000, async () => (await status(id, 'DELETE', `${pods()}/grace-target`)) !== 403, 200);
    await refused(id, 'POST', pods(), pod('by-lifecycle'));
  });

  it('emit-events: creates and patches Events — and reads nothing', async () => {
    const id = 'emit-events';
    const event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'ms.17a0c0ffee' },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: ns(), name: 'x' },
      reason: 'RoleRunning',
      message: 'Role prefill/0 in ServingGroup ms-0 is now Running',
      type: 'Normal',
      count: 1,
      source: { component: 'ripple' },
    };
    await allowed(id, 'POST', `/api/v1/namespaces/${ns()}/events`, event);
    await allowed(id, 'PATCH', `/api/v1/namespaces/${ns()}/events/ms.17a0c0ffee`, { count: 2 }, 'application/strategic-merge-patch+json');
    await refused(id, 'GET', `/api/v1/namespaces/${ns()}/events/ms.17a0c0ffee`);
    await refused(id, 'DELETE', `/api/v1/namespaces/${ns()}/events/ms.17a0c0ffee`);
    await refused(id, 'GET', `${pods()}/x`);
    await refused(id, 'POST', pods(), pod('by-events'));
  });

  it.each(['dispatcher', 'ops'] as const)('%s: lists primaries for resync — and reads or writes nothing else', async (id) => {
    await allowed(id, 'GET', '/apis/workload.serving.volcano.sh/v1alpha1/modelservings');
    await allowed(id, 'GET', '/apis/llmd.ai/v1alpha1/variantautoscalings');
    await allowed(id, 'GET', '/api/v1/pods?labelSelector=kusionstack.io%2Fcontrol%3Dtrue');
    await refused(id, 'GET', `${pods()}/x`);
    await refused(id, 'GET', '/api/v1/pods?watch=1&timeoutSeconds=1');
    await refused(id, 'POST', pods(), pod(`by-${id}`));
    await refused(id, 'GET', `/api/v1/namespaces/${ns()}/secrets`);
    await refused(id, 'PATCH', `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${ns()}/modelservings/absent/status`, { status: {} }, 'application/merge-patch+json');
  });

  it('dispatcher: lists and watches EndpointSlices in its own namespace only (--hold-until-ready), and reads or writes none', async () => {
    const slices = `/apis/discovery.k8s.io/v1/namespaces/${ns()}/endpointslices`;
    await allowed('dispatcher', 'GET', `${slices}?labelSelector=kubernetes.io%2Fservice-name%3Dfn`);
    await allowed('dispatcher', 'GET', `${slices}?watch=1&timeoutSeconds=1`);
    await refused('dispatcher', 'GET', `${slices}/fn-abcde`);
    await refused('dispatcher', 'GET', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices');
    await refused('dispatcher', 'GET', '/apis/discovery.k8s.io/v1/endpointslices');
    await refused('dispatcher', 'POST', slices, { metadata: { name: 'by-dispatcher' }, addressType: 'IPv4', endpoints: [] });
  });

  it('covers every shipped function: the watcher may list+watch each trigger, and the worker, dispatcher and ops may list each primary', async () => {
    const resource = (r: ResourceRef) => ({ group: r.group, resource: r.plural });
    const functions = allFunctions();
    expect(functions.length).toBeGreaterThan(0);
    for (const def of functions) {
      for (const t of def.triggers) {
        // A trigger without a namespace of its own watches cluster-wide in production; one confined to
        // the controller namespace (the autoscaler's ConfigMaps) is granted there only.
        const where = t.namespace ? ns() : undefined;
        for (const verb of ['list', 'watch']) expect(await may('watcher', verb, resource(t.resource), where), `watcher ${verb} ${t.resource.plural} for ${def.name}`).toBe(true);
      }
      if (!def.primary || def.resyncKeys) continue;
      const rbacId = def.name as Identity;
      expect(IDENTITIES, `an identity for ${def.name}`).toContain(rbacId);
      for (const id of [rbacId, 'dispatcher', 'ops'] as const) expect(await may(id, 'list', resource(def.primary)), `${id} list ${def.primary.plural}`).toBe(true);
    }
  });
});
