import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { deadOwner, OWNER_FILE, processStartTime } from './control-plane.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const sandboxDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'ripple-owner-'));
  dirs.push(d);
  return d;
};

describe('the sandbox owner record', () => {
  it('a live owner is not dead; an exited one is; a pid with another start time is another process', () => {
    const dir = sandboxDir();
    const own = processStartTime(process.pid);
    expect(own).toMatch(/^\d+$/);
    writeFileSync(path.join(dir, OWNER_FILE), `ripple ${process.pid} ${own}\n`);
    expect(deadOwner(dir)).toBeUndefined();

    // A real process that has exited: its pid no longer names a running process.
    const gone = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim();
    writeFileSync(path.join(dir, OWNER_FILE), `ripple ${gone} 12345\n`);
    expect(deadOwner(dir)).toBe(Number(gone));

    // This very pid, recorded with another start time: a reused pid, so the recorded owner is gone.
    writeFileSync(path.join(dir, OWNER_FILE), `ripple ${process.pid} 1\n`);
    expect(deadOwner(dir)).toBe(process.pid);
  });

  it('no owner file (npm run sandbox:up, the test harness): nobody owns it, nothing is dead', () => {
    expect(deadOwner(sandboxDir())).toBeUndefined();
  });
});
