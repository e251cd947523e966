import { describe, expect, it } from 'vitest';
import { hasReadyEndpoint, serviceOfUrl } from './dispatch-hold.js';

describe('serviceOfUrl', () => {
  it('names the Service of a cluster DNS name, with or without the cluster domain and a port', () => {
    expect(serviceOfUrl('http://ripple-reconcile-modelserving.ripple-system.svc.cluster.local')).toEqual({ name: 'ripple-reconcile-modelserving', namespace: 'ripple-system' });
    expect(serviceOfUrl('http://fn.ns.svc:8080/path')).toEqual({ name: 'fn', namespace: 'ns' });
    expect(serviceOfUrl('https://fn.ns.svc.example.internal/')).toEqual({ name: 'fn', namespace: 'ns' });
  });
  it('names none for a gateway, an IP, a short name or an external host', () => {
    expect(serviceOfUrl('http://gateway.openfaas.svcx.cluster.local:8080/function/fn')).toBeUndefined();
    expect(serviceOfUrl('http://10.0.0.12')).toBeUndefined();
    expect(serviceOfUrl('http://fn')).toBeUndefined();
    expect(serviceOfUrl('http://fn.ns')).toBeUndefined();
    expect(serviceOfUrl('https://functions.example.com')).toBeUndefined();
    expect(serviceOfUrl('not a url')).toBeUndefined();
  });
});

describe('hasReadyEndpoint', () => {
  const slice = (...endpoints: Array<{ addresses?: string[]; conditions?: { ready?: boolean | null } }>) => ({ metadata: { name: 's' }, endpoints });
  it('is true when any slice has an endpoint that is ready or of unknown readiness', () => {
    expect(hasReadyEndpoint([slice({ addresses: ['10.0.0.1'], conditions: { ready: true } })])).toBe(true);
    expect(hasReadyEndpoint([slice({ addresses: ['10.0.0.1'], conditions: {} })])).toBe(true);
    expect(hasReadyEndpoint([slice(), slice({ addresses: ['10.0.0.2'], conditions: { ready: false } }, { addresses: ['10.0.0.3'] })])).toBe(true);
  });
  it('is false with no slice, an empty slice, only unready or terminating endpoints, or a slice it cannot read', () => {
    expect(hasReadyEndpoint([])).toBe(false);
    expect(hasReadyEndpoint([{ metadata: { name: 's' }, endpoints: null }])).toBe(false);
    expect(hasReadyEndpoint([slice({ addresses: ['10.0.0.1'], conditions: { ready: false } })])).toBe(false);
    expect(hasReadyEndpoint([slice({ addresses: [], conditions: { ready: true } })])).toBe(false);
    expect(hasReadyEndpoint([{ endpoints: 'nope' }])).toBe(false);
  });
});
