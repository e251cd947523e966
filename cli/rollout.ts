/**
 * `ripple rollout history|undo modelserving/NAME`: rollback for ModelServings (kthena #1584, #584), on the
 * ControllerRevisions the function keeps (spec.revisionHistoryLimit), so the same steps work with kubectl
 * alone (docs/modelserving.md, "Rollback"). Undo writes the revision's role templates back into the spec and
 * nothing else: the function rolls it out like any template change, under the spec's partition,
 * maxUnavailable and maxSurge.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { V1ControllerRevision } from '@kubernetes/client-node';
import { z } from 'zod';
import { parseModelServing, type ModelServing, type Role } from '../api/modelserving.js';
import { CHANGE_CAUSE_ANNOTATION, indexRevisions, revisionOf, type KnownRevision } from '../functions/reconcile-modelserving/plan/revision.js';
import { loadKubeConfig, type KubeTarget } from '../kube/config.js';
import { kubeRequest } from '../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../kube/resources.js';
import { table } from './table.js';
import { packageRoot } from '../runtime/package-root.js';

export const ROLLOUT_USAGE = `Rollback of a ModelServing, on its ControllerRevisions:
  ripple rollout history modelserving/NAME [-n NAMESPACE] [--kubeconfig PATH [--context NAME] | --in-cluster]
  ripple rollout undo modelserving/NAME [--to-revision N] [-n NAMESPACE] [--kubeconfig …]
  undo puts the role templates of revision N (default: the one before the current) back into the spec; the
  rollout then follows the spec's partition, maxUnavailable and maxSurge. Without a cluster flag it uses the
  running local sandbox.`;

const root = packageRoot(import.meta.url);

export class RolloutError extends Error {}

const argsSchema = z.object({
  sub: z.enum(['history', 'undo'], { error: 'the first argument must be history or undo' }),
  target: z
    .string({ error: 'name the ModelServing: modelserving/NAME' })
    .regex(/^(modelservings?|ms)(\.workload\.serving\.volcano\.sh)?\/[a-z]([-a-z0-9]*[a-z0-9])?$/, 'the object must be modelserving/NAME'),
  namespace: z.string().min(1).default('default'),
  toRevision: z.coerce.number().int().min(1, '--to-revision must be a revision number from 1').optional(),
});

const revisionListSchema = z.object({ items: z.array(z.looseObject({ metadata: z.looseObject({}).optional(), revision: z.number() })) });

export interface HistoryRow {
  revision: number;
  name: string;
  changeCause: string;
  images: string;
  /** "update" (the spec's), "current" (status.currentRevision), both, or "". */
  state: string;
}

/** Role images, as `role=image` (entry, then worker when different): what a template change usually is. */
export function imagesOf(roles: readonly Role[]): string {
  return roles
    .map((r) => {
      const entry = r.entryTemplate.spec.containers.map((c) => c.image ?? '').join(',');
      const worker = r.workerReplicas > 0 ? (r.workerTemplate?.spec.containers.map((c) => c.image ?? '').join(',') ?? '') : '';
      return `${r.name}=${entry}${worker && worker !== entry ? `/${worker}` : ''}`;
    })
    .join(';');
}

/** The history, oldest first. */
export function historyRows(ms: ModelServing, known: ReadonlyMap<string, KnownRevision>): HistoryRow[] {
  const update = revisionOf(ms.spec.template.roles, ms.status?.collisionCount ?? 0);
  return [...known.values()]
    .map((k) => ({
      revision: k.object.revision ?? 0,
      name: k.object.metadata?.name ?? k.name,
      changeCause: k.object.metadata?.annotations?.[CHANGE_CAUSE_ANNOTATION] ?? '<none>',
      images: imagesOf(k.roles),
      state: [k.name === update || k.canonical === revisionOf(ms.spec.template.roles) ? 'update' : '', k.name === ms.status?.currentRevision ? 'current' : '']
        .filter(Boolean)
        .join(','),
    }))
    .sort((a, b) => a.revision - b.revision);
}

/**
 * The revision undo goes to: `toRevision` when given; otherwise the newest one (by `.revision`) that is not
 * the spec's. A revision that becomes the spec's again is renumbered the newest by the function, so undo
 * after undo goes back and forth, as `kubectl rollout undo` does.
 */
export function undoTarget(ms: ModelServing, known: ReadonlyMap<string, KnownRevision>, toRevision?: number): KnownRevision {
  const all = [...known.values()].sort((a, b) => (b.object.revision ?? 0) - (a.object.revision ?? 0));
  const available = all.map((k) => k.object.revision ?? 0).reverse().join(', ') || 'none';
  if (toRevision !== undefined) {
    const found = all.find((k) => k.object.revision === toRevision);
    if (!found) throw new RolloutError(`revision ${toRevision} not found; revisions of ${ms.metadata.name}: ${available}`);
    return found;
  }
  const canonical = revisionOf(ms.spec.template.roles);
  const target = all.find((k) => k.canonical !== canonical);
  if (!target) throw new RolloutError(`no previous revision of ${ms.metadata.name} to roll back to (revisions: ${available})`);
  return target;
}

/**
 * The roles undo writes: the revision's templates, with the replica counts and rolling settings of the
 * spec's role of the same name (Deployment's undo restores the pod template, not the scale).
 */
export function rolesForUndo(current: readonly Role[], target: readonly Role[]): Role[] {
  return target.map((r) => {
    const now = current.find((c) => c.name === r.name);
    if (!now) return r;
    const { replicas, maxUnavailable, maxSurge, partition } = now;
    const { maxSurge: _s, partition: _p, ...rest } = r;
    return { ...rest, replicas, maxUnavailable, ...(maxSurge !== undefined ? { maxSurge } : {}), ...(partition !== undefined ? { partition } : {}) };
  });
}

export async function runRolloutCommand(argv: string[]): Promise<string> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'in-cluster': { type: 'boolean' },
      'to-revision': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return ROLLOUT_USAGE;
  const parsed = argsSchema.safeParse({ sub: positionals[0], target: positionals[1], namespace: values.namespace, toRevision: values['to-revision'] });
  if (!parsed.success) throw new RolloutError(`rollout: ${parsed.error.issues.map((i) => i.message).join('; ')}\n${ROLLOUT_USAGE}`);
  const { sub, target, namespace, toRevision } = parsed.data;
  if (sub === 'history' && toRevision !== undefined) throw new RolloutError('rollout history: --to-revision belongs to undo');
  const name = target.split('/')[1] ?? '';

  const sandboxConfig = path.join(process.env.RIPPLE_SANDBOX_DIR ?? path.join(root, '.sandbox'), 'kubeconfig');
  const kubeconfig = values.kubeconfig ?? process.env.RIPPLE_KUBECONFIG;
  let kube: KubeTarget;
  if (values['in-cluster']) kube = { kind: 'in-cluster' };
  else if (kubeconfig) kube = { kind: 'kubeconfig', path: kubeconfig, context: values.context };
  else if (existsSync(sandboxConfig)) kube = { kind: 'kubeconfig', path: sandboxConfig };
  else throw new RolloutError('rollout: no cluster: pass --kubeconfig or --in-cluster, or start the sandbox (infra/local-control-plane/up.sh)');
  const kc = loadKubeConfig(kube);

  const raw = await kubeRequest(kc, objectPath(Resources.modelServing, namespace, name));
  const ms = parseModelServing(raw);
  if (!ms.ok) throw new RolloutError(`modelserving/${name} does not parse: ${ms.errors.join('; ')}`);
  const list = revisionListSchema.parse(
    await kubeRequest(kc, collectionPath(Resources.controllerRevision, namespace), { query: { labelSelector: `modelserving.volcano.sh/name=${name}` } }),
  );
  const { byName: known } = indexRevisions(name, list.items as V1ControllerRevision[]);

  if (sub === 'history') {
    const rows = historyRows(ms.value, known);
    return table(
      ['revision', 'change-cause', 'images', 'state'],
      rows.map((r) => [r.revision, r.changeCause, r.images, r.state]),
    );
  }
  const chosen = undoTarget(ms.value, known, toRevision);
  const roles = rolesForUndo(ms.value.spec.template.roles, chosen.roles);
  if (revisionOf(roles) === revisionOf(ms.value.spec.template.roles)) {
    return `modelserving/${name} skipped rollback (current template already matches revision ${chosen.object.revision})`;
  }
  // The resourceVersion read makes the write conditional: a spec changed meanwhile is not overwritten.
  await kubeRequest(kc, objectPath(Resources.modelServing, namespace, name), {
    method: 'PATCH',
    contentType: 'application/merge-patch+json',
    body: { metadata: { resourceVersion: ms.value.metadata.resourceVersion }, spec: { template: { roles } } },
  });
  return `modelserving/${name} rolled back to revision ${chosen.object.revision}`;
}
