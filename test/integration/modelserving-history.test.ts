// Revision history on the sandbox (Kthena PR #1643 and the rollback users ask for, kthena #1584):
// `kubectl get modelservings` shows Phase and Ready; revisionHistoryLimit keeps the newest unused
// ControllerRevisions and prunes the rest; `ripple rollout history` lists them and `ripple rollout undo`
// puts an earlier template back (a normal rollout, under the spec's rolling-update settings).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  IMAGE_A,
  IMAGE_B,
  IMAGE_C,
  createMs,
  imageOf,
  kubectlPath,
  modelServingFunctions,
  msManifest,
  patchMs,
  rolesPatch,
  waitConverged,
} from '../fixtures/modelserving-fixtures.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const one = (image: string) => [{ name: 'main', replicas: 1, workerReplicas: 0, image }];

describe('ModelServing columns and revision history', () => {
  let sb: TestSandbox;
  let ripple: RunningRipple;
  const kubectl = (...args: string[]) => run(kubectlPath(), ['--kubeconfig', inject('kubeconfig'), '-n', sb.namespace, ...args]);

  beforeAll(async () => {
    sb = await openSandbox('ms-hist');
    ripple = await startRipple(sb, modelServingFunctions());
  });
  afterAll(async () => {
    await ripple?.stop();
    await sb?.cleanup();
  });

  const revisionNames = async (name: string) => {
    const res = await sb.kc.makeApiClient(AppsV1Api).listNamespacedControllerRevision({ namespace: sb.namespace, labelSelector: `modelserving.volcano.sh/name=${name}` });
    return res.items.map((r) => ({ name: r.metadata?.name ?? '', revision: r.revision })).sort((a, b) => a.revision - b.revision);
  };

  it('kubectl get modelservings shows Phase and Ready columns', async () => {
    await createMs(sb, msManifest('cols', sb.namespace, { replicas: 1, roles: one(IMAGE_A) }));
    await waitConverged(sb, 'cols', { podsPerGroup: 1 });
    const { stdout } = await kubectl('get', 'modelservings', 'cols');
    const [header, row] = stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
    expect(header).toEqual(['NAME', 'REPLICAS', 'AVAILABLE', 'UPDATED', 'PHASE', 'READY', 'AGE']);
    expect(row?.slice(0, 6)).toEqual(['cols', '1', '1', '1', 'Ready', 'True']);
  });

  it('revisionHistoryLimit 1: after three template changes, the revision in use and the newest unused one are kept', async () => {
    const body = msManifest('hl', sb.namespace, { replicas: 1, roles: one(IMAGE_A) });
    (body.spec as Record<string, unknown>).revisionHistoryLimit = 1;
    const created = await createMs(sb, body);
    expect(created.spec.revisionHistoryLimit).toBe(1);
    const a = (await waitConverged(sb, 'hl', { podsPerGroup: 1 })).ms.status?.updateRevision;
    const revs = [a];
    for (const image of [IMAGE_B, IMAGE_C, IMAGE_A.replace('3.10', '3.7')]) {
      await patchMs(sb, 'hl', rolesPatch(one(image)));
      revs.push((await waitConverged(sb, 'hl', { podsPerGroup: 1, extra: (_m, ps) => ps.every((p) => imageOf(p) === image) })).ms.status?.updateRevision);
    }
    const names = await waitFor('history pruned to the limit', 20_000, async () => {
      const now = await revisionNames('hl');
      return now.length === 2 ? now : false;
    });
    expect(names.map((n) => n.name)).toEqual([`hl-${revs[2]}`, `hl-${revs[3]}`]);
    // The default is 10 (Kthena's), set by the CRD.
    const plain = await createMs(sb, msManifest('hd', sb.namespace, { replicas: 0, roles: one(IMAGE_A) }));
    expect(plain.spec.revisionHistoryLimit).toBe(10);
  });

  it('ripple rollout history lists the revisions; rollout undo restores the previous template, and --to-revision an older one', async () => {
    await createMs(sb, msManifest('ru', sb.namespace, { replicas: 2, roles: one(IMAGE_A) }));
    await waitConverged(sb, 'ru', { podsPerGroup: 1 });
    await patchMs(sb, 'ru', rolesPatch(one(IMAGE_B)));
    await waitConverged(sb, 'ru', { podsPerGroup: 1, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_B) });
    await patchMs(sb, 'ru', rolesPatch(one(IMAGE_C)));
    await waitConverged(sb, 'ru', { podsPerGroup: 1, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_C) });

    const ripple = (...args: string[]) =>
      run('npx', ['tsx', path.join(root, 'cli', 'ripple.ts'), 'rollout', ...args, '--kubeconfig', inject('kubeconfig'), '-n', sb.namespace], { cwd: root });
    const history = (await ripple('history', 'modelserving/ru')).stdout;
    const lines = history.trim().split('\n');
    expect(lines[0]?.split(/\s+/).slice(0, 2)).toEqual(['REVISION', 'CHANGE-CAUSE']);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['1', '2', '3']);
    expect(history).toContain(IMAGE_B);

    // undo: back to the previous template (B), rolled out as any template change.
    const undo = await ripple('undo', 'modelserving/ru');
    expect(undo.stdout).toContain('rolled back');
    await waitConverged(sb, 'ru', { podsPerGroup: 1, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_B) });
    // --to-revision 1: A again.
    await ripple('undo', 'modelserving/ru', '--to-revision', '1');
    const back = await waitConverged(sb, 'ru', { podsPerGroup: 1, extra: (_m, ps) => ps.every((p) => imageOf(p) === IMAGE_A) });
    expect(back.ms.status?.currentRevision).toBe(back.ms.status?.updateRevision);
    // A revision that does not exist is an error that says which ones do.
    const missing = await ripple('undo', 'modelserving/ru', '--to-revision', '42').then(
      () => '',
      (err: { stderr?: string }) => err.stderr ?? 'failed',
    );
    expect(missing).toMatch(/revision 42 not found/);
  });
});
