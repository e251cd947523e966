import { describe, expect, it } from 'vitest';
import { freePort } from './free-port.js';

describe('freePort', () => {
  it('never hands out the same port twice in one process, though the kernel offers closed ports again', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 1_000; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
  });
});
