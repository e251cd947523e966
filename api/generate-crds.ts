/**
 * Writes the CRDs of every custom resource Ripple owns into `infra/crds/`, generated from the zod
 * schemas in `api/`. Run with `npm run crds` (`npx tsx api/generate-crds.ts`); `--check` only
 * compares and exits 1 when a checked-in file is stale. A unit test keeps the files current.
 *
 * To add a resource, add one line to `CRDS`.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { crdToYaml, generateCrd, type CrdOptions } from './crd.js';
import { LEADER_WORKER_SET_CRD } from './leaderworkerset.js';
import { MODEL_SERVING_CRD } from './modelserving.js';
import { VARIANT_AUTOSCALING_CRD } from './variantautoscaling.js';

/** file name under infra/crds → [CRD options, schema source shown in the header]. */
export const CRDS: Record<string, [CrdOptions, string]> = {
  'leaderworkerset.yaml': [LEADER_WORKER_SET_CRD, 'api/leaderworkerset.ts'],
  'modelserving.yaml': [MODEL_SERVING_CRD, 'api/modelserving.ts'],
  'variantautoscaling.yaml': [VARIANT_AUTOSCALING_CRD, 'api/variantautoscaling.ts'],
};

export const CRD_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'infra', 'crds');

/** The expected content of every file, keyed by file name. */
export function renderCrds(): Map<string, string> {
  return new Map(Object.entries(CRDS).map(([file, [opts, source]]) => [file, crdToYaml(generateCrd(opts), source)]));
}

function main(): void {
  const check = process.argv.includes('--check');
  let stale = 0;
  mkdirSync(CRD_DIR, { recursive: true });
  for (const [file, text] of renderCrds()) {
    const path = join(CRD_DIR, file);
    let current: string | undefined;
    try {
      current = readFileSync(path, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === text) continue;
    stale++;
    if (check) console.error(`stale: infra/crds/${file}`);
    else {
      writeFileSync(path, text);
      console.log(`wrote infra/crds/${file}`);
    }
  }
  if (check && stale > 0) process.exit(1);
  if (!check && stale === 0) console.log('infra/crds is current');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
