import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../kube/raw.js';
import { classifyRefusal } from './refusal.js';

const api = (code: number, msg: string) => new KubeApiError(code, 'Forbidden', `POST /api/v1/namespaces/x/pods: ${code} ${msg}`);

describe('API refusals of a child (issue 13 scenario 4)', () => {
  it('classifies a quota as capacity, PodSecurity and webhooks as spec, RBAC as auth', () => {
    expect(classifyRefusal(api(403, 'pods "a" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1'))).toEqual({
      class: 'Capacity',
      reason: 'QuotaExceeded',
      message:
        'pods "a" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1; to fix: raise ResourceQuota "q" in this namespace, or lower spec.replicas (or a role\'s replicas) to fit it',
    });
    expect(classifyRefusal(api(403, 'pods "a" is forbidden: violates PodSecurity "restricted:latest": privileged'))?.reason).toBe('PodSecurity');
    expect(classifyRefusal(api(400, 'admission webhook "v.example.com" denied the request: no'))?.class).toBe('Spec');
    expect(classifyRefusal(api(403, 'pods is forbidden: User "ripple" cannot create resource "pods" in API group ""'))?.class).toBe('Auth');
    // Each says what to do about it.
    expect(classifyRefusal(api(403, 'pods "a" is forbidden: violates PodSecurity "restricted:latest": privileged'))?.message).toMatch(/; to fix: change the pod template/);
    expect(classifyRefusal(api(403, 'pods is forbidden: User "ripple" cannot create resource "pods" in API group ""'))?.message).toMatch(/; to fix: grant reconcile-modelserving's ServiceAccount/);
  });

  it('a quota that requires requests/limits the template lacks is a spec problem, not too little quota', () => {
    // The API server's words when a ResourceQuota limits limits.cpu and a container sets none
    // (Kubernetes 1.29+ lists the containers; older versions only the resources).
    for (const words of [
      'pods "a" is forbidden: failed quota: compute: must specify limits.cpu for: main; limits.memory for: main',
      'pods "a" is forbidden: failed quota: compute: must specify limits.cpu,limits.memory',
    ]) {
      const r = classifyRefusal(api(403, words));
      expect(r).toMatchObject({ class: 'Spec', reason: 'QuotaRequiresResources' });
      expect(r?.message).toBe(
        `${words}; to fix: set the named requests/limits on every container of the pod template (ResourceQuota "compute" requires them), or give the namespace a LimitRange with defaults for them`,
      );
      expect(r?.message).not.toMatch(/raise ResourceQuota|lower spec\.replicas/);
    }
  });

  it('leaves everything else to the usual retry', () => {
    expect(classifyRefusal(api(403, 'unable to create new content in namespace x because it is being terminated'))).toBeUndefined();
    expect(classifyRefusal(api(500, 'etcdserver: request timed out'))).toBeUndefined();
    expect(classifyRefusal(new Error('exceeded quota'))).toBeUndefined();
  });
});
