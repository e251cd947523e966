import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  kubeProxyRoutes,
  realNode,
  realNodeLeftovers,
  realNodeSysctls,
  stopRealNode,
} from '../../sandbox/real-node.js';
import { useRealNode } from '../harness/real-node.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// The real node (RIPPLE_REAL_NODE=1, infra/local-control-plane/node-up.sh) does what KWOK only pretends: a
// kubelet starts containers from images built here, probes them over HTTP, restarts them when they exit;
// kube-proxy carries a Service's traffic and CoreDNS resolves its name. The last test stops the node and
// finds nothing left on the machine.
const node = realNode();
const image = 'ripple.local/modelserver:1';

describe('real node smoke', () => {
  let sb: TestSandbox;
  let sandboxDir: string;
  beforeAll(async () => {
    sandboxDir = await useRealNode();
    sb = await openSandbox('real-node');
  });
  afterAll(async () => {
    await sb?.cleanup();
  });

  const podSpec = (name: string, labels: Record<string, string>, spec: Partial<NonNullable<V1Pod['spec']>>): V1Pod => ({
    metadata: { name, labels },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': node.name },
      tolerations: [node.toleration],
      terminationGracePeriodSeconds: 2,
      containers: [],
      ...spec,
    },
  });
  const readPod = (name: string) => sb.core.readNamespacedPod({ name, namespace: sb.namespace });
  const isReady = (pod: V1Pod) => pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

  it('registers a Ready node with the taint, running kubelet v1.34.4 on containerd', async () => {
    const n = await sb.core.readNode({ name: node.name });
    expect(n.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(n.spec?.taints).toContainEqual({ key: node.taintKey, value: 'true', effect: 'NoSchedule' });
    expect(n.status?.nodeInfo?.kubeletVersion).toBe('v1.34.4');
    expect(n.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\/1\./);
    expect(n.status?.addresses).toContainEqual({ type: 'InternalIP', address: node.ip });
  });

  it('runs a real container whose readiness comes from a real HTTP probe', async () => {
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: podSpec('server', { app: 'model' }, {
        containers: [{
          name: 'model',
          image,
          imagePullPolicy: 'Never',
          ports: [{ containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
        }],
      }),
    });
    const ready = await waitFor('pod server to be Ready on the real node', 90_000, async () => {
      const p = await readPod('server');
      return isReady(p) ? p : undefined;
    });
    expect(ready.spec?.nodeName).toBe(node.name);
    expect(ready.status?.podIP).toMatch(/^10\.244\.0\./);
    expect(ready.status?.containerStatuses?.[0]?.containerID).toMatch(/^containerd:\/\//);
    // The kubelet's probe reaches the process: told to fail, the pod turns unready; told to recover, ready.
    const url = `http://${ready.status?.podIP}:8080`;
    expect(await (await fetch(`${url}/fail`)).text()).toContain('failing');
    await waitFor('pod server to turn unready from its failing probe', 30_000, async () => !isReady(await readPod('server')));
    await fetch(`${url}/recover`);
    await waitFor('pod server to be Ready again', 30_000, async () => isReady(await readPod('server')));
  });

  it('resolves a Service through CoreDNS and carries a client pod’s request through kube-proxy', async () => {
    const svc = await sb.core.createNamespacedService({
      namespace: sb.namespace,
      body: { metadata: { name: 'model' }, spec: { selector: { app: 'model' }, ports: [{ port: 80, targetPort: 8080 }] } },
    });
    expect(svc.spec?.clusterIP).toMatch(/^10\.0\.0\./);
    const serverIp = (await readPod('server')).status?.podIP;
    await waitFor('kube-proxy to route Service model to the server pod', 30_000, async () =>
      kubeProxyRoutes(sb.namespace, 'model', `${serverIp}:8080`),
    );
    // The short name goes through the pod's search path (namespace.svc.cluster.local) to CoreDNS at kube-dns's
    // ClusterIP, and the answer's ClusterIP only leads to the server through kube-proxy's rules.
    await sb.core.createNamespacedPod({
      namespace: sb.namespace,
      body: podSpec('client', { app: 'client' }, {
        restartPolicy: 'Never',
        containers: [{ name: 'client', image, imagePullPolicy: 'Never', command: ['/modelserver', 'get', 'http://model/'] }],
      }),
    });
    const done = await waitFor('the client pod to finish', 90_000, async () => {
      const p = await readPod('client');
      return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
    });
    const terminated = done.status?.containerStatuses?.[0]?.state?.terminated;
    expect(terminated?.message).toBe('200 hello from server\n');
    expect(done.status?.phase).toBe('Succeeded');
  });

  it('a pod reaches the API server through the kubernetes Service as its own ServiceAccount, verified, and RBAC judges it', async () => {
    // In-cluster, as Ripple's image runs: KUBERNETES_SERVICE_HOST through kube-proxy, the token and ca.crt
    // mounted from the ServiceAccount. The Role lets it list pods here and nothing else.
    await sb.core.createNamespacedServiceAccount({ namespace: sb.namespace, body: { metadata: { name: 'reader' } } });
    const rbac = sb.kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: sb.namespace,
      body: { metadata: { name: 'pod-reader' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: sb.namespace,
      body: {
        metadata: { name: 'pod-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: sb.namespace }],
      },
    });
    const call = async (name: string, url: string) => {
      await sb.core.createNamespacedPod({
        namespace: sb.namespace,
        body: podSpec(name, { app: name }, {
          restartPolicy: 'Never',
          serviceAccountName: 'reader',
          containers: [{ name: 'client', image, imagePullPolicy: 'Never', command: ['/modelserver', 'get', url] }],
        }),
      });
      const done = await waitFor(`the ${name} pod to finish`, 90_000, async () => {
        const p = await readPod(name);
        return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
      });
      return done.status?.containerStatuses?.[0]?.state?.terminated?.message ?? '';
    };
    const allowed = await call('api-allowed', `https://kubernetes.default.svc/api/v1/namespaces/${sb.namespace}/pods?limit=1`);
    expect(allowed).toMatch(/^200 \{"kind":"PodList"/);
    const denied = await call('api-denied', 'https://kubernetes.default.svc/api/v1/namespaces/kube-system/secrets');
    expect(denied).toMatch(/^403 .*system:serviceaccount:[^:]+:reader.*cannot list resource \\?"secrets\\?"/);
  });

  it('restarts a container that exits, and restartCount goes up', async () => {
    const before = await readPod('server');
    expect(before.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    const answer = await fetch(`http://${before.status?.podIP}:8080/exit?code=3`);
    expect(await answer.text()).toContain('exiting with 3');
    const after = await waitFor('the server container to be restarted and Ready', 60_000, async () => {
      const p = await readPod('server');
      const s = p.status?.containerStatuses?.[0];
      return s && s.restartCount >= 1 && isReady(p) ? p : undefined;
    });
    const status = after.status?.containerStatuses?.[0];
    expect(status?.restartCount).toBe(1);
    expect(status?.lastState?.terminated?.exitCode).toBe(3);
    expect(status?.containerID).not.toBe(before.status?.containerStatuses?.[0]?.containerID);
  });

  it('stopping the node leaves no process, mount, network namespace, iptables rule, bridge or cgroup behind', async () => {
    // The check sees what a running node holds, so an empty list afterwards means something.
    const running = realNodeLeftovers(sandboxDir);
    for (const kind of [/^process .*kubelet/, /^process .*containerd/, /^process .*api-forward/, /^container process/, /^mount /, /iptables-save: :KUBE-/, /^bridge /, /^cgroup /]) {
      expect(running.some((l) => kind.test(l)), `a running node shows ${kind}`).toBe(true);
    }
    const saved = readFileSync(path.join(sandboxDir, 'node', 'sysctls.saved'), 'utf8');
    await stopRealNode(sandboxDir);
    expect(realNodeLeftovers(sandboxDir)).toEqual([]);
    const before = Object.fromEntries(saved.trim().split('\n').map((l) => l.split(' ') as [string, string]));
    expect(realNodeSysctls()).toEqual(before);
    await expect(sb.core.readNode({ name: node.name })).rejects.toThrow();
  });
});
