import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { FunctionDefinition, Trigger } from './function.js';

/**
 * Functions that live outside Ripple's tree: a module exporting `definitions(env)` (or a default export
 * doing the same) that returns FunctionDefinition[]. `--functions-module PATH` and RIPPLE_FUNCTIONS_MODULES
 * load them beside the built-in functions; `--definitions PATH` runs one module's functions instead of them.
 */
export type FunctionDefinitions = (env: NodeJS.ProcessEnv) => FunctionDefinition[] | Promise<FunctionDefinition[]>;

/** What a definition module exports. */
export interface FunctionModule {
  definitions?: FunctionDefinitions;
  default?: FunctionDefinitions;
}

const fn = (what: string) => z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', `${what} must be a function`);
const optionalFn = (what: string) => fn(what).optional();
const resourceRef = z.object({
  group: z.string(),
  version: z.string().min(1),
  kind: z.string().min(1),
  plural: z.string().min(1),
  namespaced: z.boolean(),
});
const predicate = z
  .object({ create: optionalFn('create'), update: optionalFn('update'), delete: optionalFn('delete'), generic: optionalFn('generic') })
  .strict();
const triggerShape = {
  resource: resourceRef,
  namespace: z.string().optional(),
  labelSelector: z.string().optional(),
  optional: z.boolean().optional(),
  predicate: predicate.optional(),
  map: fn('map'),
  projection: z.object({ keep: z.array(z.string()) }).optional(),
  batchMs: z.number().int().nonnegative().optional(),
} satisfies Record<keyof Trigger, z.ZodType>;
const trigger = z.object(triggerShape).strict();
const positiveMs = z.number().int().positive();

/**
 * The shape of one definition, checked when the module is loaded so a mistake is reported at start with
 * the module's name instead of failing inside the watcher or a worker. Names become queue keys, pod names
 * (`<release>-worker-<name>`) and ServiceAccounts: a DNS label, short enough for those prefixes. `satisfies`
 * keeps it in step with FunctionDefinition: a field added there and not here does not compile.
 */
const definitionShape = {
  name: z
    .string()
    .max(40, 'function names have at most 40 characters (they name Deployments and ServiceAccounts)')
    .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'function names are lowercase letters, digits and dashes, starting and ending with a letter or digit'),
  primary: resourceRef.optional(),
  primaryLabelSelector: z.string().optional(),
  triggers: z.array(trigger),
  reconcile: fn('reconcile'),
  resyncIntervalMs: positiveMs.optional(),
  concurrency: z.number().int().positive().optional(),
  reconcileTimeoutMs: positiveMs.optional(),
  resyncKeys: optionalFn('resyncKeys'),
  sweep: optionalFn('sweep'),
  metrics: optionalFn('metrics'),
} satisfies Record<keyof FunctionDefinition, z.ZodType>;
export const functionDefinitionSchema = z.object(definitionShape).strict();

const issuesOf = (err: z.ZodError, defs: unknown): string =>
  err.issues
    .map((i) => {
      const [index, ...rest] = i.path;
      const name = typeof index === 'number' && Array.isArray(defs) ? (defs[index] as { name?: unknown } | undefined)?.name : undefined;
      const where = typeof index === 'number' ? `function ${typeof name === 'string' ? `"${name}"` : `#${index}`}${rest.length ? `: ${rest.join('.')}` : ''}` : i.path.join('.');
      return `${where}: ${i.message}`;
    })
    .join('; ');

/** Imports one definition module and returns its checked definitions; the error names the module and what to fix. */
export async function loadFunctionModule(modulePath: string, env: NodeJS.ProcessEnv = process.env): Promise<FunctionDefinition[]> {
  const where = `function module ${modulePath}`;
  let mod: FunctionModule;
  try {
    mod = (await import(pathToFileURL(path.resolve(modulePath)).href)) as FunctionModule;
  } catch (err) {
    throw new Error(`${where}: cannot import it (${err instanceof Error ? err.message : String(err)})`, { cause: err });
  }
  const factory = mod.definitions ?? mod.default;
  if (typeof factory !== 'function') throw new Error(`${where}: export a function \`definitions(env)\` (or a default export) returning FunctionDefinition[]`);
  const defs: unknown = await factory(env);
  const checked = z.array(functionDefinitionSchema).min(1, 'definitions(env) returned no function').safeParse(defs);
  if (!checked.success) throw new Error(`${where}: ${issuesOf(checked.error, defs)}`);
  // The module's own objects, not zod's copies: checked, and handed on as they were written.
  return defs as FunctionDefinition[];
}

/** The module paths named by repeated `--functions-module` flags and by RIPPLE_FUNCTIONS_MODULES (comma-separated). */
export function functionModulePaths(flags: readonly string[] | undefined, env: NodeJS.ProcessEnv = process.env): string[] {
  const fromEnv = (env.RIPPLE_FUNCTIONS_MODULES ?? '').split(',').map((p) => p.trim());
  return [...new Set([...(flags ?? []), ...fromEnv].filter(Boolean))];
}

/**
 * The built-in functions followed by those of each module, in order. A name defined twice is refused: two
 * functions sharing one queue would take each other's jobs.
 */
export async function withFunctionModules(builtIn: FunctionDefinition[], modulePaths: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<FunctionDefinition[]> {
  const all = [...builtIn];
  const origin = new Map(builtIn.map((f) => [f.name, 'Ripple']));
  for (const modulePath of modulePaths) {
    for (const def of await loadFunctionModule(modulePath, env)) {
      const first = origin.get(def.name);
      if (first) throw new Error(`function module ${modulePath}: function "${def.name}" is already defined by ${first === 'Ripple' ? 'Ripple itself' : `function module ${first}`}; give it another name`);
      origin.set(def.name, modulePath);
      all.push(def);
    }
  }
  return all;
}
