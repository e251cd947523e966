import type { HandlerContext } from '../../../runtime/function.js';
import { isStatus } from '../../../kube/raw.js';
import { deletePodExactly } from '../pod-access/pod-api.js';
import { podStateOf, type LifecyclePod } from '../pod-access/pod.js';
import { nanosFromDate } from '../protocol/index.js';
import { GRACE_DELETE_ADAPTER, GRACE_DELETE_ANNOTATION, graceDeleteDue } from './grace-delete.js';

/**
 * The delete GraceDelete refused, made by the lifecycle once it may happen (kuperator's PodDeletion controller
 * does this; without it the caller had to delete again after `operate`). Called by the lifecycle's reconcile
 * with the Pod it planned from; true when it deleted (or found the Pod already gone), and the reconcile then
 * stops there.
 *
 * The delete is preconditioned on that Pod's uid and resourceVersion (deletePodExactly): a Pod changed since
 * (a cooperator took it back, an undo) answers 409, which propagates so the reconcile plans again from the live
 * Pod; a Pod already gone answers 404, taken as done. So repeating it (a retried job, two workers) deletes at
 * most once and never another Pod of the same name. The DELETE passes the grace-delete webhook, which lets a
 * granted delete operation through. The GraceDeleted Event goes only with a delete this call made: a Pod someone
 * else deleted first gets none. (An Event whose emit fails after the delete is not sent again: the retry finds
 * the Pod deleting. Events are notices, not records.)
 */
export async function finishGraceDelete(ctx: Pick<HandlerContext, 'kc' | 'now' | 'events' | 'log'>, pod: LifecyclePod): Promise<boolean> {
  if (!graceDeleteDue(podStateOf(pod), nanosFromDate(ctx.now()))) return false;
  const { namespace = '', name, uid, resourceVersion } = pod.metadata;
  const deleted = await deletePodExactly(ctx.kc, pod).catch((err: unknown) => {
    // Deleting is granted apart from the function's identity (infra/deploy/rbac/ops-lifecycle/grace-delete), so a
    // deployment that turned GraceDelete on without it gets a refusal that says what to add; retried with backoff.
    if (!isStatus(err, 403)) throw err;
    throw new Error(`GraceDelete: may not delete pod ${namespace}/${name} (${String(err)}); add the RBAC component infra/deploy/rbac/ops-lifecycle/grace-delete to the ops-lifecycle function's identity`);
  });
  if (!deleted) {
    ctx.log.info({ resourceVersion, uid }, 'grace delete finished: the pod its lifecycle granted operate was already gone');
    return true;
  }
  const message =
    `deleted: the DELETE refused by GraceDelete began lifecycle ${GRACE_DELETE_ADAPTER.id} (${GRACE_DELETE_ANNOTATION}), ` +
    `which now holds operate.podopslifecycle.kusionstack.io/${GRACE_DELETE_ADAPTER.id}`;
  ctx.log.info({ resourceVersion, uid }, 'grace delete finished: deleting the pod its lifecycle granted operate');
  await ctx.events.emit({
    involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace, name, uid },
    type: 'Normal',
    reason: 'GraceDeleted',
    message,
    source: 'ops-lifecycle',
  });
  return true;
}
