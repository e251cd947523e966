import { afterEach, describe, expect, it, vi } from 'vitest';
import { hasReadyEndpoint, ReadinessGate, serviceOfUrl } from './dispatch-hold.js';

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

describe('ReadinessGate', () => {
  const target = () => {
    const t = { held: false, hold: () => void (t.held = true), resume: () => void (t.held = false) };
    return t;
  };
  afterEach(() => void vi.useRealTimers());

  it('holds from the start, resumes when the slices say ready, holds when they no longer do', () => {
    const t = target();
    const gate = new ReadinessGate(t, { firstMs: 2_000, maxMs: 2_000 });
    expect(t.held).toBe(true);
    gate.slices(true);
    expect(t.held).toBe(false);
    gate.slices(false);
    expect(t.held).toBe(true);
    gate.stop();
  });

  it('after a refused call, resumes once the hold is over even when its timer fires before the wall clock gets there', () => {
    vi.useFakeTimers();
    const t = target();
    const gate = new ReadinessGate(t, { firstMs: 2_000, maxMs: 2_000 });
    gate.slices(true);
    gate.refused();
    expect(t.held).toBe(true);
    // libuv's timers count from the loop's cached time: the timer fires while Date.now() is still 5 ms short.
    vi.setSystemTime(Date.now() - 5);
    vi.advanceTimersByTime(2_000);
    vi.advanceTimersByTime(5);
    expect(t.held, 'still held after the refusal hold ended, with the slices ready all along').toBe(false);
    gate.stop();
  });

  it('a change of slices ends a refusal hold at once', () => {
    vi.useFakeTimers();
    const t = target();
    const gate = new ReadinessGate(t, { firstMs: 2_000, maxMs: 2_000 });
    gate.slices(true);
    gate.refused();
    gate.slices(true);
    expect(t.held).toBe(false);
    gate.stop();
  });

  it('holds briefly after a first refusal (kube-proxy behind the slice), doubling with each refusal after a hold up to the cap; refusals together count once; a slice change starts over', () => {
    vi.useFakeTimers();
    const t = target();
    const gate = new ReadinessGate(t, { firstMs: 100, maxMs: 1_000 });
    gate.slices(true);
    const heldFor = () => {
      let ms = 0;
      while (t.held && ms < 10_000) {
        vi.advanceTimersByTime(10);
        ms += 10;
      }
      return ms;
    };
    gate.refused();
    gate.refused(); // a second call of the same moment
    expect(heldFor()).toBe(100);
    gate.refused();
    expect(heldFor()).toBe(200);
    gate.refused();
    expect(heldFor()).toBe(400);
    gate.refused();
    expect(heldFor()).toBe(800);
    gate.refused();
    expect(heldFor()).toBe(1_000);
    gate.slices(true);
    gate.refused();
    expect(heldFor()).toBe(100);
    gate.stop();
  });
});
