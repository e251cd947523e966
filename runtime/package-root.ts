import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder holding Ripple's package.json, found from a module's own URL by walking up: the same answer
 * whether the module runs from the sources (cli/ripple.ts, through tsx) or compiled (dist/cli/ripple.js,
 * `npm run build`, as the image runs it), where a fixed `..` would stop at dist/.
 */
export function packageRoot(moduleUrl: string): string {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(moduleUrl)}`);
    dir = parent;
  }
  return dir;
}
