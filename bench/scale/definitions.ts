// The built-in functions, each reconcile reporting its start to the probe (probe.ts), for the workers
// bench/scale.ts starts (`ripple worker --definitions bench/scale/definitions.ts`): the bench pairs each
// watch event it sees with the first reconcile of the event's key that starts after it. Triggers,
// handlers and settings are the real ones; only the start is recorded. The functions are those of the
// checkout the bench runs (BENCH_SCALE_CHECKOUT), so edits in progress in this tree do not change them.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as FunctionsModule from '../../functions/index.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { recordReconcile } from './probe.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function definitions(): Promise<FunctionDefinition[]> {
  const checkout = process.env.BENCH_SCALE_CHECKOUT ?? root;
  const { allFunctions } = (await import(pathToFileURL(path.join(checkout, 'functions/index.ts')).href)) as typeof FunctionsModule;
  return allFunctions().map((def) => ({
    ...def,
    reconcile: (req, ctx) => {
      recordReconcile(`${def.name}:${req.key}`);
      return def.reconcile(req, ctx);
    },
  }));
}
