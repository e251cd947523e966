#!/usr/bin/env node
// The `ripple` command. In a checkout it runs the TypeScript sources through tsx's loader (no build step); the
// published package carries only the compiled dist/ (package.json `files`), so installed it runs that.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const sources = new URL('../cli/ripple.ts', import.meta.url);
if (existsSync(sources)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(sources.href);
} else {
  await import('../dist/cli/ripple.js');
}
