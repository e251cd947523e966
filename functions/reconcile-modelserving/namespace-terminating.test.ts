import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../kube/raw.js';
import { isNamespaceTerminating } from './namespace-terminating.js';

describe('a create refused because the namespace is being deleted (issue 13 scenario 10)', () => {
  it('is told apart from other 403s by the API server message', () => {
    const msg = 'POST /api/v1/namespaces/x/pods: 403 pods "a" is forbidden: unable to create new content in namespace x because it is being terminated';
    expect(isNamespaceTerminating(new KubeApiError(403, 'Forbidden', msg))).toBe(true);
    expect(isNamespaceTerminating(new KubeApiError(403, 'Forbidden', 'pods "a" is forbidden: exceeded quota: q'))).toBe(false);
    expect(isNamespaceTerminating(new KubeApiError(409, 'AlreadyExists', msg))).toBe(false);
    expect(isNamespaceTerminating(new Error(msg))).toBe(false);
  });
});
