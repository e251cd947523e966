import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageRoot } from './package-root.js';

describe('packageRoot', () => {
  it('is the checkout for a module run from the sources', () => {
    const here = path.dirname(fileURLToPath(import.meta.url));
    expect(packageRoot(import.meta.url)).toBe(path.resolve(here, '..'));
  });

  it('is the folder above dist/ for a compiled module (npm run build), not dist/ itself', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'ripple-root-'));
    writeFileSync(path.join(root, 'package.json'), '{}');
    mkdirSync(path.join(root, 'dist', 'cli'), { recursive: true });
    expect(packageRoot(pathToFileURL(path.join(root, 'dist', 'cli', 'ripple.js')).href)).toBe(root);
  });

  it('says which module had no package.json above it', () => {
    expect(() => packageRoot('file:///nowhere/cli/ripple.js')).toThrow('no package.json above /nowhere/cli/ripple.js');
  });
});
