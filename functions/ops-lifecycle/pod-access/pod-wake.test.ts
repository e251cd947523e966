import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../base/log.js';
import { ObjectStore } from '../../../watcher/store.js';
import { armedPodWakes, firstListShowsChange, podChanged, podWakeWatches, setWakeWatchLimit, stopPodWakes } from './pod-wake.js';
import type { LifecyclePod } from './pod.js';

const pod = (uid: string): LifecyclePod => ({ metadata: { namespace: 'ns', name: 'p', uid, resourceVersion: '5' } }) as LifecyclePod;

/** A watch whose first list has (or has not yet) been delivered into `store`. */
function watchOf(store: ObjectStore, synced: () => boolean) {
  return { store, health: () => ({ resource: 'pods', up: true, synced: synced(), relists: 1 }) } as Parameters<typeof firstListShowsChange>[0];
}

describe('firstListShowsChange (a Pod deleted, or changed, before the wake first sees the list)', () => {
  it('is true after the first list when the store lacks the Pod', async () => {
    expect(await firstListShowsChange(watchOf(new ObjectStore(), () => true), pod('a'), () => '5')).toBe(true);
  });

  it('is true when the store holds another Pod of that name (another uid)', async () => {
    const store = new ObjectStore();
    store.apply('ADDED', pod('b'));
    expect(await firstListShowsChange(watchOf(store, () => true), pod('a'), () => '5')).toBe(true);
  });

  it('is false when the store holds the Pod itself at the version waited on', async () => {
    const store = new ObjectStore();
    store.apply('ADDED', pod('a'));
    expect(await firstListShowsChange(watchOf(store, () => true), pod('a'), () => '5')).toBe(false);
  });

  it('is true when the store already holds the Pod past the version waited on (listed before the wait followed it)', async () => {
    const store = new ObjectStore();
    store.apply('ADDED', { ...pod('a'), metadata: { ...pod('a').metadata, resourceVersion: '21' } });
    expect(await firstListShowsChange(watchOf(store, () => true), pod('a'), () => '20')).toBe(true);
    expect(await firstListShowsChange(watchOf(store, () => true), pod('a'), () => '21')).toBe(false);
  });

  it('waits for the first list, and gives up (false) once the watch is disarmed before it syncs', async () => {
    let synced = false;
    let live = true;
    const answer = firstListShowsChange(watchOf(new ObjectStore(), () => synced), pod('a'), () => (live ? '5' : undefined));
    const settled = await Promise.race([answer.then(() => true), new Promise((r) => setTimeout(r, 300)).then(() => false)]);
    expect(settled).toBe(false);
    live = false;
    expect(await answer).toBe(false);
    // A disarmed watch that syncs later changes nothing.
    synced = true;
    expect(await firstListShowsChange(watchOf(new ObjectStore(), () => synced), pod('a'), () => (live ? '5' : undefined))).toBe(false);
  });
});

describe('podChanged with a signal already aborted', () => {
  it('rejects with the signal\'s reason and opens no watch', async () => {
    const abort = new AbortController();
    abort.abort(new Error('handler aborted'));
    await expect(podChanged(new KubeConfig(), pod('a'), createLogger('test', 'silent'), 60_000, abort.signal)).rejects.toThrow('handler aborted');
    expect(armedPodWakes()).toBe(0);
  });
});

describe('podChanged past the per-pod watch limit', () => {
  it('opens no watch and ends at its fallback', async () => {
    setWakeWatchLimit(0);
    try {
      const started = Date.now();
      // An uncontrolled Pod: no namespace cache covers it, so it would need a watch of its own.
      await podChanged(new KubeConfig(), pod('a'), createLogger('test', 'silent'), 50);
      expect(Date.now() - started).toBeGreaterThanOrEqual(45);
      expect(podWakeWatches()).toBe(0);
      expect(armedPodWakes()).toBe(0);
    } finally {
      setWakeWatchLimit();
    }
  });
});

describe('a wait whose fallback ended it, with nobody asking again', () => {
  it('stops one fallback period later instead of holding its watch until WAKE_WATCH_MAX_MS', async () => {
    const log = createLogger('test', 'silent');
    try {
      // An uncontrolled Pod: it gets a watch of its own (against no API server here; only its bookkeeping matters).
      await podChanged(new KubeConfig(), pod('lingering'), log, 100);
      expect(podWakeWatches(), 'the watch stays for a prompt re-ask').toBe(1);
      const started = Date.now();
      while (armedPodWakes() > 0 && Date.now() - started < 2_000) await new Promise((r) => setTimeout(r, 20));
      expect(armedPodWakes()).toBe(0);
      expect(podWakeWatches()).toBe(0);
    } finally {
      await stopPodWakes();
    }
  });

  it('stays while the caller asks again within the period', async () => {
    const log = createLogger('test', 'silent');
    try {
      await podChanged(new KubeConfig(), pod('re-asked'), log, 150);
      // Asked again at once, as a caller that still waits does: the first ask's linger (150 ms from now) must not end it.
      const again = podChanged(new KubeConfig(), pod('re-asked'), log, 150);
      await new Promise((r) => setTimeout(r, 230));
      expect(podWakeWatches()).toBe(1);
      await again;
    } finally {
      await stopPodWakes();
    }
  });
});
