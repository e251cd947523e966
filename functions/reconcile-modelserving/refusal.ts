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
  reason: 'QuotaExceeded' | 'PodSecurity' | 'AdmissionDenied' | 'Forbidden';
  /** The API server's words, without the request line. */
  message: string;
}

/** Looked at again this often while a refusal stands (a quota raised, a policy changed: no event reaches us). */
export const REFUSAL_RECHECK_MS = 30_000;

export function classifyRefusal(err: unknown): Refusal | undefined {
  if (!(err instanceof KubeApiError) || (err.code !== 403 && err.code !== 400 && err.code !== 422)) return undefined;
  const message = err.message.replace(/^[A-Z]+ \S+: \d+ /, '');
  if (err.code === 403 && /exceeded quota|failed quota/.test(message)) return { class: 'Capacity', reason: 'QuotaExceeded', message };
  if (/violates PodSecurity/.test(message)) return { class: 'Spec', reason: 'PodSecurity', message };
  if (/admission webhook .* denied the request|denied request:|ValidatingAdmissionPolicy/.test(message)) {
    return { class: 'Spec', reason: 'AdmissionDenied', message };
  }
  if (err.code === 403 && /cannot create resource/.test(message)) return { class: 'Auth', reason: 'Forbidden', message };
  return undefined;
}
