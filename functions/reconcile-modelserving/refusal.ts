/**
 * API refusals of a child the plan built (issue 13 scenario 4): a 403 from a ResourceQuota, from
 * PodSecurity admission, from an admission webhook or from RBAC is not a transient error — retrying
 * with backoff while status keeps saying "GroupProgressing" tells nobody what to fix. Each is
 * classified into seed 002's classes so status says it in words; the reconcile then comes back slowly.
 */
import type { ErrorClass } from '../../status/engine.js';
import { KubeApiError } from '../../kube/raw.js';

export interface Refusal {
  class: ErrorClass;
  /** For the ServingGroupsReady condition. */
  reason: 'QuotaExceeded' | 'QuotaRequiresResources' | 'PodSecurity' | 'AdmissionDenied' | 'Forbidden';
  /** The API server's words, without the request line, then what a user can do about it. */
  message: string;
}

/** What to do about each refusal, in words (issue 13: `kubectl describe` must say what to fix). */
function remedy(reason: Refusal['reason'], apiMessage: string): string {
  switch (reason) {
    case 'QuotaExceeded': {
      const quota = /exceeded quota: ([^,\s]+)/.exec(apiMessage)?.[1];
      return `to fix: raise ResourceQuota ${quota ? `"${quota}" ` : ''}in this namespace, or lower spec.replicas (or a role's replicas) to fit it`;
    }
    case 'QuotaRequiresResources': {
      // `failed quota: <q>: must specify limits.cpu…`: the quota tracks a resource the pod does not
      // declare. More quota or fewer replicas would not help; the template (or a LimitRange) must.
      const quota = /failed quota: ([^:\s]+):/.exec(apiMessage)?.[1];
      return `to fix: set the named requests/limits on every container of the pod template${quota ? ` (ResourceQuota "${quota}" requires them)` : ''}, or give the namespace a LimitRange with defaults for them`;
    }
    case 'PodSecurity':
      return "to fix: change the pod template to meet the namespace's PodSecurity level, or change the namespace's pod-security.kubernetes.io/enforce label";
    case 'AdmissionDenied':
      return 'to fix: change the pod template to satisfy that admission policy, or ask its owner to allow it';
    case 'Forbidden':
      return "to fix: grant reconcile-modelserving's ServiceAccount create on that resource in this namespace (its Role or ClusterRole)";
  }
}

function refusal(cls: ErrorClass, reason: Refusal['reason'], apiMessage: string): Refusal {
  return { class: cls, reason, message: `${apiMessage}; ${remedy(reason, apiMessage)}` };
}

/** Looked at again this often while a refusal stands (a quota raised, a policy changed: no event reaches us). */
export const REFUSAL_RECHECK_MS = 30_000;

export function classifyRefusal(err: unknown): Refusal | undefined {
  if (!(err instanceof KubeApiError) || (err.code !== 403 && err.code !== 400 && err.code !== 422)) return undefined;
  const message = err.message.replace(/^[A-Z]+ \S+: \d+ /, '');
  // Before the generic quota match: this one is fixed in the pod template, so it is a spec problem.
  if (err.code === 403 && /failed quota: .*must specify/.test(message)) return refusal('Spec', 'QuotaRequiresResources', message);
  if (err.code === 403 && /exceeded quota|failed quota/.test(message)) return refusal('Capacity', 'QuotaExceeded', message);
  if (/violates PodSecurity/.test(message)) return refusal('Spec', 'PodSecurity', message);
  if (/admission webhook .* denied the request|denied request:|ValidatingAdmissionPolicy/.test(message)) {
    return refusal('Spec', 'AdmissionDenied', message);
  }
  if (err.code === 403 && /cannot create resource/.test(message)) return refusal('Auth', 'Forbidden', message);
  return undefined;
}
