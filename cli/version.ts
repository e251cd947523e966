import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { packageRoot } from '../runtime/package-root.js';

/**
 * Ripple's version: package.json's, which a release makes equal to the chart's version and the image tag
 * (docs/releasing.md). Read from the file at run time, so the image (which ships package.json) and a
 * checkout answer the same, from the sources or compiled.
 */
export function rippleVersion(): string {
  const file = path.join(packageRoot(import.meta.url), 'package.json');
  return z.object({ version: z.string().min(1) }).parse(JSON.parse(readFileSync(file, 'utf8'))).version;
}
