// Issue 30, item 3: LeaderWorkerSet compatibility. Ripple installs the `leaderworkerset.x-k8s.io` CRD (shaped
// from sigs.k8s.io/lws's v1 API) and serves a LeaderWorkerSet through a shadow ModelServing, as Kthena's
// lws_controller.go does: the upstream sample converges on the sandbox's KWOK nodes, its pods carry the LWS
// labels, its status is backfilled from the ModelServing's, /scale works, and deleting it takes everything.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { getMs, kubectlPath, modelServingFunctions } from '../fixtures/modelserving-fixtures.js';

const run = promisify(execFile);

/** sigs.k8s.io/lws's config/samples/leaderworkerset_v1_leaderworkerset.yaml, as its docs give it. */
const SAMPLE = `apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: leaderworkerset-sample
spec:
  replicas: 3
  leaderWorkerTemplate:
    size: 4
    workerTemplate:
      spec:
        containers:
        - name: nginx
          image: nginxinc/nginx-unprivileged:1.27
          resources:
            limits:
              cpu: "100m"
            requests:
              cpu: "50m"
          ports:
          - containerPort: 8080
`;
const NAME = 'leaderworkerset-sample';

const lwsRead = z.object({
  metadata: z.looseObject({ uid: z.string(), generation: z.number() }),
  status: z
    .looseObject({
      replicas: z.number().optional(),
      readyReplicas: z.number().optional(),
      updatedReplicas: z.number().optional(),
      hpaPodSelector: z.string().optional(),
      observedGeneration: z.number().optional(),
      conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
    })
    .optional(),
});

describe('LeaderWorkerSet served through a shadow ModelServing', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  const kubectl = async (args: string[], stdin?: string) => {
    const child = run(kubectlPath(), ['--kubeconfig', inject('kubeconfig'), '-n', sb.namespace, ...args]);
    if (stdin !== undefined) child.child.stdin?.end(stdin);
    return child;
  };
  const getLws = async () => lwsRead.parse(await kubeRequest(sb.kc, objectPath(Resources.leaderWorkerSet, sb.namespace, NAME)));
  const lwsPods = async (): Promise<V1Pod[]> =>
    (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `leaderworkerset.sigs.k8s.io/name=${NAME}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const ready = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

  beforeAll(async () => {
    sb = await openSandbox('ms-lws');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  it("the upstream sample converges: 3 groups of 4 pods with LWS's labels, and its status is backfilled", async () => {
    await kubectl(['apply', '--validate=strict', '-f', '-'], SAMPLE);
    const lws = await getLws();

    // The shadow ModelServing: same name, controlled by the LeaderWorkerSet, one role of 1 leader + 3 workers.
    const ms = await waitFor('the shadow ModelServing', 30_000, () => getMs(sb, NAME));
    const owner = (ms.metadata.ownerReferences as Array<Record<string, unknown>> | undefined)?.[0];
    expect(owner).toMatchObject({ apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet', name: NAME, uid: lws.metadata.uid, controller: true });
    expect(ms.spec).toMatchObject({ replicas: 3, plugins: [{ name: 'lws-standard-labels', type: 'BuiltIn' }] });

    const status = await waitFor('the LeaderWorkerSet status backfilled', 90_000, async () => {
      const s = (await getLws()).status;
      return s?.readyReplicas === 3 && s.replicas === 3 ? s : false;
    }, 250);
    expect(status.updatedReplicas).toBe(3);
    expect(status.observedGeneration).toBe(lws.metadata.generation);
    expect(status.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');

    const pods = await lwsPods();
    expect(pods).toHaveLength(12);
    expect(pods.every(ready)).toBe(true);
    const seen = pods.map((p) => {
      const l = p.metadata?.labels ?? {};
      return `${l['leaderworkerset.sigs.k8s.io/group-index']}/${l['leaderworkerset.sigs.k8s.io/worker-index']}`;
    });
    expect(seen.sort()).toEqual(['0/0', '0/1', '0/2', '0/3', '1/0', '1/1', '1/2', '1/3', '2/0', '2/1', '2/2', '2/3']);
    for (const p of pods) expect(p.metadata?.labels?.['leaderworkerset.sigs.k8s.io/group-key']).toMatch(/^[0-9a-f]{40}$/);
    // The leader of each group runs the worker template (no leaderTemplate), as LWS does.
    expect(new Set(pods.map((p) => p.spec?.containers[0]?.image))).toEqual(new Set(['nginxinc/nginx-unprivileged:1.27']));

    const table = await kubectl(['get', 'lws', NAME]);
    expect(table.stdout).toMatch(new RegExp(`${NAME}\\s+3\\s+3\\s+3\\s+`));
  });

  it('scales through the LeaderWorkerSet scale subresource, and a template change rolls the groups', async () => {
    await kubectl(['scale', `lws/${NAME}`, '--replicas=2']);
    await waitFor('2 groups', 60_000, async () => {
      const s = (await getLws()).status;
      const pods = await lwsPods();
      return s?.replicas === 2 && s.readyReplicas === 2 && pods.length === 8 ? true : false;
    }, 250);
    const scale = z.object({ status: z.object({ replicas: z.number(), selector: z.string() }) }).parse(
      await kubeRequest(sb.kc, `${objectPath(Resources.leaderWorkerSet, sb.namespace, NAME)}/scale`),
    );
    expect(scale.status.replicas).toBe(2);
    // One pod per group, as for the ModelServing: what an HPA counts.
    const selected = await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: scale.status.selector });
    expect(selected.items).toHaveLength(2);

    await kubectl(['patch', 'lws', NAME, '--type=json', '-p', '[{"op":"replace","path":"/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image","value":"nginxinc/nginx-unprivileged:1.28"}]']);
    await waitFor('every pod on the new image', 90_000, async () => {
      const pods = await lwsPods();
      const s = (await getLws()).status;
      return pods.length === 8 && pods.every((p) => p.spec?.containers[0]?.image === 'nginxinc/nginx-unprivileged:1.28' && ready(p)) && s?.updatedReplicas === 2 && s.readyReplicas === 2;
    }, 250);
  });

  it('deleting the LeaderWorkerSet takes the shadow ModelServing and its pods with it', async () => {
    await kubectl(['delete', 'lws', NAME, '--wait=true']);
    await waitFor('the shadow ModelServing gone', 60_000, async () => (await getMs(sb, NAME)) === undefined);
    await waitFor('the pods gone', 60_000, async () => (await lwsPods()).length === 0);
    try {
      await getLws();
      throw new Error('the LeaderWorkerSet is still there');
    } catch (err) {
      expect(isStatus(err, 404)).toBe(true);
    }
  });
});
