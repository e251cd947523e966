#!/usr/bin/env node
// The `ripple` command: runs the TypeScript CLI through tsx's loader (no separate build step).
import { register } from 'tsx/esm/api';

register();
await import('../cli/ripple.ts');
