import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { definition as emitEvents } from '../../functions/emit-events/definition.js';
import { objectMetaSchema } from '../../kube/object.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { type ResourceRef, objectPath } from '../../kube/resources.js';
import type { FunctionDefinition, Handler } from '../../runtime/function.js';
import { type ClassifiedError, computeKstatus, writeStatus } from '../../status/index.js';
import { redisTransitionOutbox, transitionOutboxKey } from '../../status/transition-outbox.js';
import { plainStateWriter } from '../../queue/fenced-write.js';
import { mapToSelf } from '../../watcher/mappers.js';
import { generationChanged } from '../../watcher/predicates.js';
import { eventsAbout } from '../fixtures/emit-events-cluster.js';
import { type RunningRipple, startRipple } from '../harness/ripple.js';
import { type TestSandbox, openSandbox, waitFor } from '../harness/sandbox.js';

// The status helper on a real status subresource: a throwaway CRD (Widget) and a minimal function
// that writes its status with `writeStatus`, so the reading tools are tested against exactly what
// the helper writes: `kubectl wait`, kstatus itself (cli-utils, built from
// test/fixtures/emit-status-kstatus), and `kubectl get events` for the transitions.
const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const kubectlBin = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
const kstatusDir = path.join(root, 'test', 'fixtures', 'emit-status-kstatus');
const kstatusBin = path.join(root, '.cache', 'kstatus-check', 'kstatus-check');

const GROUP = 'statustest.ripple.dev';
const CRD_NAME = `widgets.${GROUP}`;
const widgets: ResourceRef = { group: GROUP, version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true };
const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: CRD_NAME },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { replicas: { type: 'integer' } } },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

const widgetSchema = z.object({
  metadata: objectMetaSchema,
  spec: z.object({ replicas: z.number().int() }),
  status: z.unknown().optional(),
});
const readWidgetSchema = widgetSchema.extend({
  status: z.object({
    phase: z.string(),
    observedGeneration: z.number(),
    replicas: z.number().optional(),
    conditions: z.array(z.object({ type: z.string(), status: z.enum(['True', 'False', 'Unknown']), reason: z.string(), message: z.string(), lastTransitionTime: z.string() })),
  }),
});

/** The smallest reconciler that uses the helper the way ModelServing and VariantAutoscaling do. */
const reconcileWidget: Handler = async (req, ctx) => {
  let raw: unknown;
  try {
    raw = await kubeRequest(ctx.kc, objectPath(widgets, req.namespace, req.name));
  } catch (err) {
    if (isStatus(err, 404)) return;
    throw err;
  }
  const widget = widgetSchema.parse(raw);
  const errors: ClassifiedError[] =
    widget.spec.replicas < 0 ? [{ class: 'Spec', message: `spec.replicas: must be >= 0, got ${widget.spec.replicas}` }] : [];
  const result = await writeStatus(ctx, {
    resource: widgets,
    object: widget,
    input: { children: [{ name: 'Replicas', state: 'Ready' }], errors },
    fields: { replicas: widget.spec.replicas },
    source: 'widget-controller',
  });
  if (result.terminal) return;
  return result.requeueAfterMs !== undefined ? { requeueAfterMs: result.requeueAfterMs } : undefined;
};

const widgetFunction: FunctionDefinition = {
  name: 'reconcile-widget',
  primary: widgets,
  triggers: [{ resource: widgets, predicate: generationChanged, map: mapToSelf }],
  reconcile: reconcileWidget,
};

let sb: TestSandbox;
let ripple: RunningRipple | undefined;
let kstatusAvailable = false;

async function kubectl(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(kubectlBin, ['--kubeconfig', inject('kubeconfig'), ...args], { timeout: 120_000 });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** kstatus's own verdict (cli-utils `status.Compute`) on the object as the API server returns it. */
async function kstatus(obj: unknown): Promise<{ status: string; message: string }> {
  const child = execFile(kstatusBin);
  const output = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`kstatus-check exited with ${code}`))));
  });
  child.stdin?.end(JSON.stringify(obj));
  return z.object({ status: z.string(), message: z.string() }).parse(JSON.parse(await output));
}

async function readWidget(name: string): Promise<unknown> {
  return kubeRequest(sb.kc, objectPath(widgets, sb.namespace, name));
}

async function createWidget(name: string, replicas: number): Promise<void> {
  await kubeRequest(sb.kc, `/apis/${GROUP}/v1/namespaces/${sb.namespace}/widgets`, {
    method: 'POST',
    body: { apiVersion: `${GROUP}/v1`, kind: 'Widget', metadata: { name }, spec: { replicas } },
  });
}

beforeAll(async () => {
  sb = await openSandbox('status');
  // A previous run's CRD may still be terminating; creating over it would race its removal.
  await kubectl('wait', '--for=delete', `crd/${CRD_NAME}`, '--timeout=60s');
  await kubeRequest(sb.kc, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { method: 'POST', body: crd }).catch(
    (err: unknown) => {
      if (!isStatus(err, 409)) throw err;
    },
  );
  const established = await kubectl('wait', '--for=condition=Established', `crd/${CRD_NAME}`, '--timeout=60s');
  if (established.code !== 0) throw new Error(`CRD not established: ${established.out}`);
  // kstatus itself, built once into .cache from the Go module proxy's cli-utils (the Go toolchain
  // is the one the sandbox's control plane was built with).
  if (!existsSync(kstatusBin)) {
    await run('go', ['build', '-o', kstatusBin, '.'], { cwd: kstatusDir, timeout: 600_000 }).catch((err: unknown) => {
      console.error(`kstatus-check could not be built (${String(err)}); checking against status/kstatus.ts only`);
    });
  }
  kstatusAvailable = existsSync(kstatusBin);
  ripple = await startRipple(sb, [widgetFunction, emitEvents()]);
});

afterAll(async () => {
  await ripple?.stop();
  await sb?.cleanup();
  await kubectl('delete', 'crd', CRD_NAME, '--wait=false');
});

describe('status written with the state engine helper', () => {
  it('a converged resource: kubectl wait --for=condition=Ready returns, kstatus reads Current', async () => {
    await createWidget('good', 2);
    const wait = await kubectl('wait', '-n', sb.namespace, '--for=condition=Ready', 'widget/good', '--timeout=60s');
    expect(wait.out).toContain('condition met');
    expect(wait.code).toBe(0);

    const obj = await readWidget('good');
    const widget = readWidgetSchema.parse(obj);
    expect(widget.status).toMatchObject({ phase: 'Ready', observedGeneration: widget.metadata.generation, replicas: 2 });
    expect(widget.status.conditions.map((c) => `${c.type}=${c.status}`)).toEqual([
      'Ready=True',
      'ConfigValid=True',
      'AuthValid=True',
      'DependenciesReachable=True',
      'Stalled=False',
      'ReplicasReady=True',
    ]);
    expect(computeKstatus(widget).status).toBe('Current');
    if (kstatusAvailable) expect(await kstatus(obj)).toMatchObject({ status: 'Current' });
    // A resource that was never unhealthy has nothing to announce.
    expect(await eventsAbout(sb.kc, sb.namespace, 'good')).toEqual([]);
  });

  it('an invalid spec: ConfigValid=False and phase Failed naming the field, a Warning; fixed: Ready and a Normal', async () => {
    await createWidget('bad', -1);
    const invalid = await kubectl('wait', '-n', sb.namespace, '--for=condition=ConfigValid=False', 'widget/bad', '--timeout=60s');
    expect(invalid.code).toBe(0);
    const obj = await readWidget('bad');
    const widget = readWidgetSchema.parse(obj);
    expect(widget.status.phase).toBe('Failed');
    const configValid = widget.status.conditions.find((c) => c.type === 'ConfigValid');
    expect(configValid).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(configValid?.message).toContain('spec.replicas');
    expect(widget.status.conditions.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(computeKstatus(widget).status).toBe('Failed');
    if (kstatusAvailable) {
      const verdict = await kstatus(obj);
      expect(verdict.status).toBe('Failed');
      expect(verdict.message).toContain('spec.replicas');
    }
    const warnings = await waitFor('the InvalidSpec Warnings through emit-events', 30_000, async () => {
      const events = (await eventsAbout(sb.kc, sb.namespace, 'bad')).filter((e) => e.type === 'Warning');
      return events.length === 2 ? events : undefined;
    });
    expect(warnings.map((e) => e.reason)).toEqual(['InvalidSpec', 'InvalidSpec']);
    expect(warnings.map((e) => e.message).sort()).toEqual([
      'ConfigValid is now False: spec.replicas: must be >= 0, got -1',
      'Ready is now False: spec.replicas: must be >= 0, got -1',
    ]);
    expect(warnings[0]?.source?.component).toBe('widget-controller');

    await kubeRequest(sb.kc, objectPath(widgets, sb.namespace, 'bad'), {
      method: 'PATCH',
      body: { spec: { replicas: 1 } },
      contentType: 'application/merge-patch+json',
    });
    const ready = await kubectl('wait', '-n', sb.namespace, '--for=condition=Ready', 'widget/bad', '--timeout=60s');
    expect(ready.code).toBe(0);
    const healed = readWidgetSchema.parse(await readWidget('bad'));
    expect(healed.status.phase).toBe('Ready');
    expect(healed.status.observedGeneration).toBe(healed.metadata.generation);
    if (kstatusAvailable) expect(await kstatus(await readWidget('bad'))).toMatchObject({ status: 'Current' });
    const normals = await waitFor('the recovery Normals', 30_000, async () => {
      const events = (await eventsAbout(sb.kc, sb.namespace, 'bad')).filter((e) => e.type === 'Normal');
      return events.length === 2 ? events : undefined;
    });
    expect(normals.map((e) => `${e.reason}: ${e.message}`).sort()).toEqual([
      'AllComponentsReady: Ready is now True',
      'ConfigurationValid: ConfigValid is now True',
    ]);
  });

  it('sends a transition Event a reconcile saved and did not get to send; drops one whose write never landed', async () => {
    await createWidget('outbox', 1);
    const ready = await kubectl('wait', '-n', sb.namespace, '--for=condition=Ready', 'widget/outbox', '--timeout=60s');
    expect(ready.code).toBe(0);
    const widget = readWidgetSchema.parse(await readWidget('outbox'));
    const readyCondition = widget.status.conditions.find((c) => c.type === 'Ready')!;
    // Outside any claim, as the test stands for a worker that died: plain writes into the function's state.
    const state = plainStateWriter(sb.redis, sb.prefix, 'reconcile-widget');
    const key = transitionOutboxKey(state, { apiVersion: `${GROUP}/v1`, kind: 'Widget', namespace: sb.namespace, name: 'outbox' });
    // Every Event of the first reconciles went out: nothing is left waiting.
    expect(await sb.redis.exists(key)).toBe(0);

    // What a worker that died between its status write and its Events leaves behind: an entry for
    // the condition as written, and one for a write that lost its conflict (not in the status).
    const outbox = redisTransitionOutbox(sb.redis, state, key);
    await outbox.save([
      {
        uid: widget.metadata.uid,
        condition: { type: 'Ready', status: readyCondition.status, lastTransitionTime: readyCondition.lastTransitionTime },
        event: { type: 'Normal', reason: 'AllComponentsReady', message: 'Ready is now True (left over)' },
      },
      {
        uid: widget.metadata.uid,
        condition: { type: 'ConfigValid', status: 'False', lastTransitionTime: '2020-01-01T00:00:00Z' },
        event: { type: 'Warning', reason: 'InvalidSpec', message: 'ConfigValid is now False: never written' },
      },
    ]);
    // The next reconcile of the object, whatever brings it.
    await kubeRequest(sb.kc, objectPath(widgets, sb.namespace, 'outbox'), { method: 'PATCH', body: { spec: { replicas: 2 } }, contentType: 'application/merge-patch+json' });
    const events = await waitFor('the left-over Event', 30_000, async () => {
      const all = await eventsAbout(sb.kc, sb.namespace, 'outbox');
      return all.some((e) => e.message === 'Ready is now True (left over)') ? all : undefined;
    });
    expect(events.map((e) => e.message)).not.toContain('ConfigValid is now False: never written');
    await waitFor('the outbox to be empty', 10_000, async () => (await sb.redis.exists(key)) === 0);
  });
});
