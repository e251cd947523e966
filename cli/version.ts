import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/**
 * Ripple's version: package.json's, which a release makes equal to the chart's version and the image tag
 * (docs/releasing.md). Read from the file at run time, so the image (which ships package.json) and a
 * checkout answer the same without a build step.
 */
export function rippleVersion(): string {
  const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'package.json');
  return z.object({ version: z.string().min(1) }).parse(JSON.parse(readFileSync(file, 'utf8'))).version;
}
