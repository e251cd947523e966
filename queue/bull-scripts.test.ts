import { describe, expect, it } from 'vitest';
import { ADD_KEYS_IN_FINISH, finishAddKeys, FINISH_ADD_KEYS_LUA } from './bull-scripts.js';

describe('RELEASE_AND_FINISH sends each key once', () => {
  // BullMQ's moveToCompletedArgs order, and bullAddKeys()' order, as names.
  const finish = ['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'completed', 'job', 'metrics', 'marker'];
  const add = ['wait', 'paused', 'meta', 'id', 'completed', 'delayed', 'active', 'events', 'marker'];

  it("finds the add's keys among moveToFinished's and sends only the id counter after them", () => {
    expect(finishAddKeys(add, finish)).toEqual(['id']);
    // The Lua reads them where the list says: KEYS[11] is moveToFinished's first, KEYS[25] the first after its 14.
    const keys = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9', 'r10', ...finish, 'id'];
    const lua = [...FINISH_ADD_KEYS_LUA.matchAll(/KEYS\[(\d+)\]/g)].map((m) => keys[Number(m[1]) - 1]);
    expect(lua).toEqual(add);
    expect(ADD_KEYS_IN_FINISH).toHaveLength(add.length);
  });

  it('refuses a BullMQ whose finish keys are ordered otherwise', () => {
    const swapped = [...finish];
    [swapped[7], swapped[8]] = [swapped[8]!, swapped[7]!];
    expect(() => finishAddKeys(add, swapped)).toThrow(/pinned bullmq version/);
  });
});
