/**
 * Carries out a plan's actions against the API server, idempotently (plan/actions.ts's contract):
 * in order, stopping at the first failure; creates treat 409 AlreadyExists as done; deletes carry the
 * UID they were decided for, and 404 or a failed precondition (409) count as done.
 *
 * Consecutive actions of the same stage (all deletes, the ControllerRevision, the PodGroups, the pod
 * and Service creates, the clean-up) do not depend on one another, so each stage runs with bounded
 * concurrency; a stage starts only when the one before it fully succeeded, which keeps the order that
 * matters (nothing is created on a revision before its ControllerRevision exists).
 *
 * With the PodOpsLifecycle opt-in, a pod is never deleted outright: `deleteThroughLifecycle` begins
 * the lifecycle, and deletes only once the cooperators let go; until then the step reports how long to
 * wait, and the reconcile asks to be run again.
 */
import { PDB_RESOURCE } from './plan/disruption.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { isStatus, KubeApiError, kubeRequest } from '../../kube/raw.js';
import { objectMetaSchema } from '../../kube/object.js';
import { collectionPath, objectPath, Resources, type ResourceRef } from '../../kube/resources.js';
import type { Logger } from '../../base/log.js';
import { deleteThroughLifecycle } from '../ops-lifecycle/client/index.js';
import { describeAction, type Action } from './plan/actions.js';
import { ownershipOf } from './plan/owner.js';
import type { ModelServing } from '../../api/modelserving.js';
import { MODELSERVING_DELETE_OPTIONS } from './lifecycle.js';
import { classifyRefusal, type Refusal } from './refusal.js';
import type { ChildResource, WriteTracker } from './write-marks.js';

const versionSchema = z.object({ metadata: z.object({ resourceVersion: z.string().optional() }) });

/** The resourceVersion an API answer carries, if it is an object with one. */
function versionOf(answer: unknown): string | undefined {
  const parsed = versionSchema.safeParse(answer);
  return parsed.success ? parsed.data.metadata.resourceVersion : undefined;
}

export interface ApplyOptions {
  kc: KubeConfig;
  namespace: string;
  log: Logger;
  now: () => Date;
  /** Requests in flight at once within a stage. */
  concurrency: number;
  /** Delete pods through PodOpsLifecycle (the ModelServing opted in). */
  lifecycle: boolean;
  /** The ModelServing: a create answered 409 by an object someone else controls is reported, not counted as done. */
  owner?: ModelServing;
  /**
   * Told of every write to a child, with the resourceVersion it was answered with (undefined when the
   * outcome's version is not known: a 409, a 404, a lifecycle step), for write-marks.ts.
   */
  written?: WriteTracker;
}

export interface ApplyResult {
  applied: number;
  /** Pod deletions still waiting on their lifecycle. */
  waiting: number;
  /** When to look again for those (undefined: nothing waits). */
  requeueAfterMs: number | undefined;
  /** Creates refused with 409 because someone else's object holds the name. */
  taken: Action[];
}

/** The API server refused an object the plan built from the spec (422/400): the spec cannot work as written. */
export class RejectedChildError extends Error {
  override readonly name = 'RejectedChildError';
  constructor(
    readonly action: Action,
    readonly apiMessage: string,
  ) {
    super(`${describeAction(action)} was rejected: ${apiMessage}`);
  }
}

/** A quota, a policy or RBAC refused a child (refusal.ts): reported on status, not retried with backoff. */
export class RefusedChildError extends Error {
  override readonly name = 'RefusedChildError';
  constructor(
    readonly action: Action,
    readonly refusal: Refusal,
  ) {
    super(`${describeAction(action)} was refused: ${refusal.message}`);
  }
}

type Stage = 'delete' | 'revision' | 'podGroup' | 'create' | 'cleanup';

function stageOf(a: Action, seenCreate: boolean): Stage {
  switch (a.kind) {
    case 'createControllerRevision':
    case 'renumberControllerRevision':
      return 'revision';
    case 'createPodGroup':
    case 'updatePodGroup':
      return 'podGroup';
    case 'createPod':
    case 'createService':
      return 'create';
    case 'deleteControllerRevision':
      return seenCreate ? 'cleanup' : 'delete';
    case 'createDisruptionBudget':
    case 'setDisruptionBudget':
    case 'deleteDisruptionBudget':
      return 'cleanup';
    default:
      return 'delete';
  }
}

/** Splits the ordered actions into runs of one stage each, keeping their order. */
export function stages(actions: readonly Action[]): Action[][] {
  const out: Action[][] = [];
  let last: Stage | undefined;
  let seenNonDelete = false;
  for (const a of actions) {
    const stage = stageOf(a, seenNonDelete);
    if (stage !== 'delete') seenNonDelete = true;
    if (stage !== last || out.length === 0) out.push([]);
    out[out.length - 1]?.push(a);
    last = stage;
  }
  return out;
}

/**
 * Create-if-absent. Returns false when the name is held by a foreign object (plan/owner.ts, checked only
 * when `owner` is given): a 409 from a previous attempt of ours is success, as is one from a previous
 * ModelServing of the same name (the planner deletes that child, and the create comes again); one from
 * someone else's object means the child does not exist and will not, until that object goes.
 */
async function create(kc: KubeConfig, ref: ResourceRef, namespace: string, body: unknown, owner?: ModelServing, written?: (rv: string | undefined) => void): Promise<boolean> {
  try {
    // Sent first, then noted: `written?.(await …)` would skip the request itself when nobody tracks writes.
    const answer = await kubeRequest(kc, collectionPath(ref, namespace), { method: 'POST', body });
    written?.(versionOf(answer));
    return true;
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
    // The name exists: what the cache holds of it is not known from here.
    written?.(undefined);
    const name = z.object({ metadata: z.object({ name: z.string() }) }).safeParse(body);
    if (!owner || !name.success) return true;
    let existing: unknown;
    try {
      existing = await kubeRequest(kc, objectPath(ref, namespace, name.data.metadata.name));
    } catch (getErr) {
      if (isStatus(getErr, 404)) return true; // gone meanwhile: the next reconcile creates it
      throw getErr;
    }
    const parsed = z.object({ metadata: objectMetaSchema }).safeParse(existing);
    return parsed.success && ownershipOf(parsed.data.metadata, owner) !== 'foreign';
  }
}

/**
 * Deletes a child as planned: preconditioned on the UID and the resourceVersion it was planned from, so a
 * delete sent by a reconcile that lost its claim fails with 409 once the next holder has changed the child
 * (docs/kernel.md, "Effects").
 */
async function remove(kc: KubeConfig, ref: ResourceRef, namespace: string, planned: { name: string; uid: string; resourceVersion?: string | undefined }, written?: (rv: string | undefined) => void): Promise<void> {
  const { name, uid, resourceVersion } = planned;
  try {
    const preconditions = { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) };
    const body = { apiVersion: 'v1', kind: 'DeleteOptions', ...(uid || resourceVersion ? { preconditions } : {}), propagationPolicy: 'Background' };
    // Pods and Services answer with the object as deleted (or marked for deletion), with the version its event
    // carries; ControllerRevisions answer with a bare Status, whose missing version marks the write unknown.
    const answer = await kubeRequest(kc, objectPath(ref, namespace, name), { method: 'DELETE', body });
    written?.(versionOf(answer));
  } catch (err) {
    // 404: already gone. 409: a precondition failed: the name belongs to a replacement, or the child changed
    // since it was planned, and its change brings the next reconcile, which plans from it.
    if (isStatus(err, 404) || isStatus(err, 409)) {
      written?.(undefined);
      return;
    }
    throw err;
  }
}

interface StepResult {
  waitMs?: number;
  /** The name is held by someone else's object. */
  taken?: boolean;
}

async function step(a: Action, opts: ApplyOptions): Promise<StepResult> {
  const { kc, namespace } = opts;
  const to = (kind: ChildResource) => (opts.written ? (rv: string | undefined) => opts.written?.note(kind, rv) : undefined);
  try {
    switch (a.kind) {
      case 'createControllerRevision':
        await create(kc, Resources.controllerRevision, namespace, a.object, undefined, to('controllerrevisions'));
        return {};
      case 'renumberControllerRevision':
        // `data` is immutable, `revision` is not; the resourceVersion read is the precondition (409: plan again).
        opts.written?.note('controllerrevisions', versionOf(
          await kubeRequest(kc, objectPath(Resources.controllerRevision, namespace, a.name), {
            method: 'PATCH',
            body: { metadata: { resourceVersion: a.resourceVersion }, revision: a.revision },
            contentType: 'application/merge-patch+json',
          }),
        ));
        return {};
      case 'createPodGroup':
        await create(kc, Resources.podGroup, namespace, a.podGroup);
        return {};
      case 'updatePodGroup':
        // A merge patch of the spec, preconditioned on the UID and resourceVersion it was planned from (409: plan again).
        await kubeRequest(kc, objectPath(Resources.podGroup, namespace, a.name), {
          method: 'PATCH',
          body: { metadata: { uid: a.uid, ...(a.resourceVersion ? { resourceVersion: a.resourceVersion } : {}) }, spec: a.spec },
          contentType: 'application/merge-patch+json',
        });
        return {};
      case 'createPod':
        return (await create(kc, Resources.pod, namespace, a.pod, opts.owner, to('pods'))) ? {} : { taken: true };
      case 'createService':
        return (await create(kc, Resources.service, namespace, a.service, opts.owner, to('services'))) ? {} : { taken: true };
      case 'deletePod': {
        if (!opts.lifecycle) {
          await remove(kc, Resources.pod, namespace, a, to('pods'));
          return {};
        }
        // PodOpsLifecycle labels and deletes the pod in steps of its own: list next time.
        opts.written?.noteUnknown();
        const r = await deleteThroughLifecycle(
          { kc, now: opts.now },
          { namespace, name: a.name, ...(a.uid ? { uid: a.uid } : {}) },
          MODELSERVING_DELETE_OPTIONS,
        );
        return r.state === 'waiting' ? { waitMs: r.requeueAfterMs } : {};
      }
      case 'deleteService':
        await remove(kc, Resources.service, namespace, a, to('services'));
        return {};
      case 'deletePodGroup':
        await remove(kc, Resources.podGroup, namespace, a);
        return {};
      case 'deleteControllerRevision':
        await remove(kc, Resources.controllerRevision, namespace, a, to('controllerrevisions'));
        return {};
      case 'createDisruptionBudget':
        await create(kc, PDB_RESOURCE, namespace, a.object);
        return {};
      case 'setDisruptionBudget':
        // 409 (changed meanwhile) fails the reconcile, which plans again from what is there now.
        await kubeRequest(kc, objectPath(PDB_RESOURCE, namespace, a.name), {
          method: 'PATCH',
          body: { metadata: { resourceVersion: a.resourceVersion }, spec: { maxUnavailable: a.maxUnavailable } },
          contentType: 'application/merge-patch+json',
        });
        return {};
      case 'deleteDisruptionBudget':
        await remove(kc, PDB_RESOURCE, namespace, a);
        return {};
    }
  } catch (err) {
    // 422 Invalid, or 400 when the object cannot even be decoded (a malformed quantity): either way
    // the template it was built from is wrong, and retrying cannot help.
    if (err instanceof KubeApiError && (err.code === 422 || err.code === 400) && (a.kind === 'createPod' || a.kind === 'createService')) {
      // The API server's own words, without the request line kubeRequest puts in front.
      throw new RejectedChildError(a, err.message.replace(/^[A-Z]+ \S+: \d+ /, ''));
    }
    const refusal = a.kind === 'createPod' || a.kind === 'createService' ? classifyRefusal(err) : undefined;
    if (refusal) throw new RefusedChildError(a, refusal);
    throw err;
  }
}

/** Runs `fn` over `items` with at most `limit` in flight; stops starting new ones after a failure. */
async function bounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const lane = async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failure) throw failure.err;
}

export async function applyActions(actions: readonly Action[], opts: ApplyOptions): Promise<ApplyResult> {
  let applied = 0;
  let waiting = 0;
  let requeueAfterMs: number | undefined;
  const taken: Action[] = [];
  for (const run of stages(actions)) {
    await bounded(run, opts.concurrency, async (a) => {
      opts.log.debug({ action: describeAction(a), reason: a.reason }, 'apply');
      const r = await step(a, opts);
      if (r.taken) taken.push(a);
      else if (r.waitMs !== undefined) {
        waiting++;
        requeueAfterMs = Math.min(requeueAfterMs ?? r.waitMs, r.waitMs);
      } else applied++;
    });
  }
  return { applied, waiting, requeueAfterMs, taken };
}
